import { createHash } from 'node:crypto';
import type { ItemContext } from '@fanout/core';
import { chat, LlmAnswerError, parseJsonAnswer, type LlmConfig } from '@fanout/llm';
import { z } from 'zod';
import { findingKey, recordIdentity, type Finding, type SubjectData } from '../rules/engine.ts';
import { text } from '../rules/functions.ts';
import type { CompiledRuleSpec } from '../rules/rule-set.ts';

/** The instructions around every review prompt; its version is part of each finding's prompt version. */
export const SYSTEM_PROMPT = [
  'You review clinical trial data for a data manager, one subject at a time.',
  'You get a check to apply and the subject\u2019s records, each with a "record" number.',
  'Answer with a JSON object: {"findings": [{"record": <number>, "message": "<what is wrong, in one sentence>"}]}.',
  'List only records that fail the check; answer {"findings": []} when none does. Do not invent records.',
].join('\n');

const answerSchema = z.object({ findings: z.array(z.object({ record: z.number().int(), message: z.string().min(1).max(1000) })) });

/** At most this many records go into one call; a subject with more is reviewed in several. */
const RECORDS_PER_CALL = 150;

export interface ReviewOutcome {
  findings: Finding[];
  /** Why the rule failed for this subject (a malformed answer), when it did. */
  error?: string;
}

export interface AgentReview {
  model: string;
  review(rule: CompiledRuleSpec, data: SubjectData, ctx: Pick<ItemContext, 'limits' | 'signal'>): Promise<ReviewOutcome>;
}

export const promptVersion = (rule: CompiledRuleSpec): string => createHash('sha256').update(`${SYSTEM_PROMPT}\u0000${rule.prompt}\u0000${(rule.show ?? []).join(',')}`).digest('hex').slice(0, 12);

/**
 * The IIT agent: rules of kind llm send a subject's records of the rule's domain (the variables it
 * shows) to the platform's model, under the platform's shared limits, and record what the model
 * flags as findings with the model and prompt version. A 429 or 5xx is thrown and retried with the
 * subject; an answer that is not the asked JSON fails that rule for that subject, with the reason.
 */
export function agentReview(config: LlmConfig): AgentReview {
  return {
    model: config.model,
    async review(rule, data, ctx) {
      const scopes = new Set(rule.scope.split(',').map((s) => s.trim()));
      const records = data.records.filter((r) => {
        if (!scopes.has(r.domain)) return false;
        return !rule.compiledWhen || rule.compiledWhen.test({ row: r.row, subject: data.subjectRow, domains: {}, trial: {}, params: rule.params ?? {}, dataset: r.dataset, field: '', value: null });
      });
      const findings: Finding[] = [];
      const version = promptVersion(rule);
      const show = rule.show ?? [];
      for (let i = 0; i < records.length; i += RECORDS_PER_CALL) {
        const chunk = records.slice(i, i + RECORDS_PER_CALL);
        const payload = chunk.map((r) => ({ record: r.recno, ...Object.fromEntries(show.map((v) => [v, r.row[v] ?? null])) }));
        const content = await chat(ctx, config, {
          messages: [
            { role: 'system', content: SYSTEM_PROMPT },
            { role: 'user', content: `Check (${rule.id}): ${rule.prompt}\nSubject: ${data.subject}\nRecords (${rule.scope}):\n${JSON.stringify(payload)}` },
          ],
        });
        let answer: z.output<typeof answerSchema>;
        try {
          const parsed = answerSchema.safeParse(parseJsonAnswer(content));
          if (!parsed.success) throw new LlmAnswerError(`the answer is not {"findings": [{"record", "message"}]}: ${parsed.error.issues[0]?.message ?? ''}`);
          answer = parsed.data;
        } catch (error) {
          return { findings, error: `the model's answer was malformed: ${(error as Error).message.slice(0, 300)}` };
        }
        const byRecno = new Map(chunk.map((r) => [r.recno, r]));
        for (const f of answer.findings) {
          const record = byRecno.get(f.record);
          if (!record) return { findings, error: `the model named record ${f.record}, which it was not shown` };
          const variables = [...show.filter((v) => v in record.row), 'model', 'prompt_version'];
          findings.push({
            key: findingKey(rule.id, record.dataset, data.subject, recordIdentity(record.domain, record.row, record.recno), ''),
            ruleId: rule.id,
            level: 'subject',
            subject: data.subject,
            site: data.site,
            domain: record.domain,
            dataset: record.dataset,
            recno: record.recno,
            variables,
            values: [...show.filter((v) => v in record.row).map((v) => text(record.row[v])), config.model, version],
            message: `${rule.message}: ${f.message}`,
            severity: rule.severity,
          });
        }
      }
      return { findings };
    },
  };
}
