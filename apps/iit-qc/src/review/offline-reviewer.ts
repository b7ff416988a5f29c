import type { ChatMessage } from '@fanout/llm';

/**
 * The answers of the local simulated model (`pnpm start`): it reads the records it is shown and
 * flags those whose verbatim and coded terms share no word, the kind of inconsistency the agent
 * review looks for. Deterministic, so a local run gives the same findings every time.
 */
export function offlineReview(messages: readonly ChatMessage[]): string {
  const user = messages.find((m) => m.role === 'user')?.content ?? '';
  const at = user.indexOf('\n', user.indexOf('Records ('));
  let records: Record<string, unknown>[] = [];
  try {
    records = JSON.parse(user.slice(at + 1)) as Record<string, unknown>[];
  } catch {
    return JSON.stringify({ findings: [] });
  }
  const words = (v: unknown) => new Set(String(v ?? '').toUpperCase().split(/[^A-Z0-9]+/).filter((w) => w.length > 2));
  const findings = records.flatMap((r) => {
    const verbatim = words(r.AETERM);
    const coded = words(r.AEDECOD);
    if (verbatim.size === 0 || coded.size === 0 || [...verbatim].some((w) => coded.has(w))) return [];
    return [{ record: r.record, message: `"${String(r.AETERM)}" is not obviously "${String(r.AEDECOD)}"` }];
  });
  return JSON.stringify({ findings });
}
