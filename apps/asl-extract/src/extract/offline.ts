import type { Extractor, StudyData } from './study.ts';

type Field = NonNullable<StudyData[keyof StudyData]>;

function found(text: string, match: RegExpExecArray | null, group = 1): { value: string; span: Field['span'] } | null {
  if (!match || match[group] === undefined) return null;
  const value = match[group]!.trim().replace(/\s+/g, ' ').replace(/[.;,]$/, '');
  const start = match.index + match[0].indexOf(match[group]!);
  return value ? { value, span: { start, end: start + match[group]!.length, text: text.slice(start, start + match[group]!.length) } } : null;
}

const DESIGNS: Array<[RegExp, string]> = [
  [/\b(randomi[sz]ed,? (?:double-blind,? )?(?:placebo-)?controlled trial)\b/i, 'randomised controlled trial'],
  [/\b(cluster[- ]randomi[sz]ed trial)\b/i, 'cluster randomised trial'],
  [/\b(prospective cohort study)\b/i, 'prospective cohort study'],
  [/\b(retrospective cohort study)\b/i, 'retrospective cohort study'],
  [/\b(case[- ]control study)\b/i, 'case-control study'],
  [/\b(cross[- ]sectional study)\b/i, 'cross-sectional study'],
  [/\b(systematic review(?: and meta-analysis)?)\b/i, 'systematic review'],
];

/**
 * The built-in extractor: rules over the text, no network. It recognises the phrasings common in
 * abstracts ("a randomised controlled trial of 240 adults with …", "Intervention: …",
 * "Comparator: …", "Primary outcome: …") and records the span each value came from.
 */
export class OfflineExtractor implements Extractor {
  readonly model = 'offline-rules';
  readonly promptVersion = 'rules-v1';
  readonly usesLlm = false;

  async extract(text: string): Promise<StudyData> {
    let studyDesign: StudyData['studyDesign'] = null;
    for (const [pattern, name] of DESIGNS) {
      const hit = found(text, pattern.exec(text));
      if (hit) {
        studyDesign = { value: name, span: hit.span };
        break;
      }
    }
    const n = /\b(?:n\s*=\s*|of |enrolled |randomi[sz]ed |included )(\d{1,3}(?:,\d{3})*|\d+)\s+(?:adults|adult|patients|participants|children|women|men|people|subjects)\b/i.exec(text);
    const sampleSizeHit = found(text, n);
    // A count the schema takes (a whole number of at least one): "0 patients" or 20 digits say nothing.
    const count = sampleSizeHit ? Number(sampleSizeHit.value.replaceAll(',', '')) : 0;
    const sampleSize = sampleSizeHit && Number.isSafeInteger(count) && count >= 1 ? { value: count, span: sampleSizeHit.span } : null;
    const population = found(
      text,
      /\b\d[\d,]*\s+((?:adults|adult|patients|participants|children|women|men|people|subjects)\s+(?:with|aged|who)\s+[^.;\n]+?)(?=\s+(?:in|at|from|across)\s+\d|[.;\n]|$)/i.exec(text),
    );
    const intervention = found(text, /\bIntervention:\s*([^.\n]+)/i.exec(text));
    const comparator = found(text, /\b(?:Comparator|Control):\s*([^.\n]+)/i.exec(text));
    const primaryOutcome = found(text, /\bPrimary (?:outcome|endpoint):\s*([^.\n]+)/i.exec(text));
    return { studyDesign, sampleSize, population, intervention, comparator, primaryOutcome };
  }
}
