import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA, qcTest, type QcTest } from './harness.ts';

const PROJECT = join(DATA, 'redcap', 'longitudinal');

type Line = Record<string, string>;
interface Calc {
  form: string;
  field: string;
  weight: string;
  height: string;
}

// The independent side: REDCap's rule H for the project's two BMI fields computed from the CSV
// files alone, in exact decimal arithmetic (no floating point, none of the app's code).

/** A decimal as an exact fraction n / d (d > 0), or null when the text is not a number. */
function fraction(text: string): { n: bigint; d: bigint } | null {
  const m = /^\s*([-+]?)(\d*)(?:\.(\d*))?\s*$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
  const decimals = m[3] ?? '';
  return { n: BigInt(`${m[2] || '0'}${decimals}`) * (m[1] === '-' ? -1n : 1n), d: 10n ** BigInt(decimals.length) };
}

/**
 * round(([weight]*10000)/(([height])^(2)),1) in tenths, rounded half away from zero as REDCap's
 * round() does; null (blank) when an input is blank or not a number, or the height is 0: REDCap
 * leaves the calculation blank then.
 */
function bmiTenths(weight: string, height: string): bigint | null {
  const w = fraction(weight);
  const h = fraction(height);
  if (!w || !h || h.n === 0n) return null;
  const num = w.n * 100_000n * h.d * h.d;
  const den = w.d * h.n * h.n;
  const magnitude = (2n * (num < 0n ? -num : num) + den) / (2n * den);
  return num < 0n ? -magnitude : magnitude;
}

/** Rule H: the saved value is not the calculation's (a blank calculation wants a blank value). */
function calcWrong(saved: string, tenths: bigint | null): boolean {
  if (tenths === null) return saved.trim() !== '';
  const v = fraction(saved);
  return !v || v.n * 10n !== tenths * v.d;
}

/** The columns of a records export that belong to a form: its fields, checkbox choices, status. */
function formColumns(header: string[], dictionary: Line[], form: string): string[] {
  const fields = dictionary.slice(1).filter((d) => d['Form Name'] === form).map((d) => d['Variable / Field Name']!);
  return header.filter((h) => h === `${form}_complete` || fields.some((f) => h === f || h.startsWith(`${f}___`)));
}

/** "record/event" of every line that carries a value of the form: where the form was collected. */
function collected(lines: Line[], header: string[], dictionary: Line[], form: string): string[] {
  const columns = formColumns(header, dictionary, form);
  return lines.filter((l) => columns.some((c) => (l[c] ?? '') !== '')).map((l) => `${l.study_id}/${l.redcap_event_name}`).sort();
}

function expectedH(lines: Line[], header: string[], dictionary: Line[], calc: Calc): string[] {
  const rows = new Set(collected(lines, header, dictionary, calc.form));
  return lines
    .filter((l) => rows.has(`${l.study_id}/${l.redcap_event_name}`) && calcWrong(l[calc.field] ?? '', bmiTenths(l[calc.weight] ?? '', l[calc.height] ?? '')))
    .map((l) => `${l.study_id}/${l.redcap_event_name}`)
    .sort();
}

const toCsv = (header: string[], lines: Line[]) => [header.join(','), ...lines.map((l) => header.map((h) => `"${(l[h] ?? '').replace(/"/g, '""')}"`).join(','))].join('\n') + '\n';

const RULES = `name: REDCap longitudinal data quality
generate:
  - from: redcap
    checks: [A, B, C, D, E, G, H]
`;

describe('a longitudinal REDCap project: rule H (calculated field wrong) per event', () => {
  let t: QcTest;
  let studyId: string;
  let ruleSetId: string;
  const tmp = mkdtempSync(join(tmpdir(), 'iit-redcap-long-'));
  const dictionaryCsv = readFileSync(join(PROJECT, 'dictionary.csv'));
  const dictionary = parse(dictionaryCsv, { columns: true }) as Line[];
  const dataCsv = readFileSync(join(PROJECT, 'data.csv'), 'utf8');
  const lines = parse(dataCsv, { columns: true }) as Line[];
  const header = Object.keys(lines[0]!);
  const forms = [...new Set(dictionary.map((d) => d['Form Name']!))];

  // The calc fields, read from the dictionary; the independent computation knows this one formula.
  const BMI = /^round\(\(\[(\w+)\]\*10000\)\/\(\(\[(\w+)\]\)\^\(2\)\),1\)$/;
  const calcs: Calc[] = dictionary
    .filter((d) => d['Field Type'] === 'calc')
    .map((d) => {
      const m = BMI.exec(d['Choices, Calculations, OR Slider Labels']!.replace(/\s/g, ''));
      if (!m) throw new Error(`calc field ${d['Variable / Field Name']} is not the BMI formula`);
      return { form: d['Form Name']!, field: d['Variable / Field Name']!, weight: m[1]!, height: m[2]! };
    });
  const ruleOf = (c: Calc) => `REDCAP-H-${c.form}-${c.field}`;

  // The event/form designations of project.xml (ODM: StudyEventDef > FormRef), and event.csv's events.
  const xml = readFileSync(join(PROJECT, 'project.xml'), 'utf8');
  const designated = new Map<string, Set<string>>();
  for (const m of xml.matchAll(/<StudyEventDef [^>]*redcap:UniqueEventName="([^"]+)"[^>]*>([\s\S]*?)<\/StudyEventDef>/g)) {
    designated.set(m[1]!, new Set([...m[2]!.matchAll(/redcap:FormName="([^"]+)"/g)].map((f) => f[1]!)));
  }
  const events = (parse(readFileSync(join(PROJECT, 'event.csv')), { columns: true }) as Line[]).map((e) => e.unique_event_name!);

  beforeAll(async () => {
    t = await qcTest();
    await t.api();
    await t.workers(2);
    studyId = await t.study('REDCapR longitudinal', 'redcap');
    expect((await t.upload(studyId, 'dictionary.csv', dictionaryCsv, { kind: 'dictionary' })).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Uploads a records file (as the next version) and runs the rule set on it to the end. */
  const runOn = async (file: string) => {
    const res = await t.upload(studyId, 'data.csv', readFileSync(file), { kind: 'records' });
    expect(res.status, await res.clone().text()).toBe(201);
    ruleSetId ??= (await t.json('POST', `/studies/${studyId}/rule-sets`, { source: RULES })).id;
    const runId = await t.run(studyId, ruleSetId);
    const run = await t.waitRun(runId);
    const rules = await t.rules(runId);
    for (const [id, r] of rules) expect(r.status, `${id}: ${r.reason ?? ''}`).not.toBe('error');
    const findings = await t.findings(runId);
    // Where each finding is: the event of its record, from the records the run checked.
    const eventOf = new Map<string, string>();
    const records = new Map<string, string[]>();
    for (const subject of [...new Set(lines.map((l) => l.study_id!))]) {
      for (const r of (await t.json('GET', `/runs/${runId}/records?subject=${subject}&limit=1000`)).records) {
        const event = JSON.parse(r.values).redcap_event_name as string;
        eventOf.set(`${r.dataset}#${r.recno}#${subject}`, event);
        records.set(r.dataset, [...(records.get(r.dataset) ?? []), `${subject}/${event}`]);
      }
    }
    const at = (f: any) => `${f.subject}/${eventOf.get(`${f.dataset}#${f.recno}#${f.subject}`)}`;
    const h = (c: Calc) => findings.filter((f) => f.ruleId === ruleOf(c));
    return { runId, run, rules, findings, records, at, h };
  };

  const writeCopy = (name: string, copy: Line[]) => {
    const file = join(tmp, name);
    writeFileSync(file, toCsv(header, copy));
    return file;
  };

  it('finds on the project as shipped what the independent computation finds, only at events that collect the form', async () => {
    expect(calcs.map((c) => [c.form, c.field, c.weight, c.height])).toEqual([
      ['demographics', 'bmi', 'weight', 'height'],
      ['baseline_data', 'bmi2', 'weight2', 'height2'],
    ]);
    expect([...designated.keys()].sort()).toEqual([...events].sort());
    const { runId, rules, findings, records, at, h } = await runOn(join(PROJECT, 'data.csv'));
    expect((await t.json('GET', `/tasks/${runId}`)).total).toBe(3);
    // Both calculations translate: nothing about rule H in the rule set's notes.
    const set = await t.json('GET', `/rule-sets/${ruleSetId}`);
    expect(set.notes.filter((n: string) => n.startsWith('rule H'))).toEqual([]);

    // A form's records are exactly the lines that carry its values, all at events that designate it.
    for (const form of forms) {
      const expected = collected(lines, header, dictionary, form);
      expect((records.get(form) ?? []).sort(), form).toEqual(expected);
      for (const re of expected) expect(designated.get(re.split('/')[1]!)?.has(form), `${form} at ${re}`).toBe(true);
    }
    expect(collected(lines, header, dictionary, 'demographics')).toEqual(['100/enrollment_arm_1', '220/enrollment_arm_1', '304/enrollment_arm_2']);
    // No finding of any rule at an event that does not collect its form.
    const located = findings.filter((f) => f.recno !== null);
    expect(located.length).toBeGreaterThan(0);
    for (const f of located) expect(designated.get(at(f).split('/')[1]!)?.has(f.dataset), `${f.ruleId} at ${at(f)}`).toBe(true);

    // Rule H per calc field: the count and the records, as computed independently.
    for (const c of calcs) {
      const expected = expectedH(lines, header, dictionary, c);
      expect(rules.get(ruleOf(c))?.issues ?? -1, c.field).toBe(expected.length);
      expect(h(c).map(at).sort(), c.field).toEqual(expected);
    }
    // As shipped, every BMI is right, 100's 31.25 included (31.3: half away from zero).
    expect(calcs.map((c) => expectedH(lines, header, dictionary, c).length)).toEqual([0, 0]);
    expect(calcs.map((c) => rules.get(ruleOf(c))!.status)).toEqual(['passed', 'passed']);
    expect(bmiTenths('80', '160')).toBe(313n);
    shippedKeys = findings.map((f) => f.key);
  }, 180_000);

  let shippedKeys: string[] = [];
  let plantedKey = '';

  it('finds one planted wrong BMI at its record and event, and nothing else changes', async () => {
    const copy = lines.map((l) => ({ ...l }));
    const target = copy.find((l) => l.study_id === '100' && l.redcap_event_name === 'enrollment_arm_1')!;
    // 31.25 rounded half to even (or truncated): wrong for REDCap, whose round() gives 31.3.
    target.bmi = '31.2';
    const { run, rules, findings, at, h } = await runOn(writeCopy('planted.csv', copy));
    const [bmi, bmi2] = calcs as [Calc, Calc];
    expect(expectedH(copy, header, dictionary, bmi)).toEqual(['100/enrollment_arm_1']);
    expect(h(bmi).map(at)).toEqual(expectedH(copy, header, dictionary, bmi));
    expect(rules.get(ruleOf(bmi))!.issues).toBe(1);
    expect(h(bmi2).map(at)).toEqual(expectedH(copy, header, dictionary, bmi2));
    const [planted] = h(bmi);
    expect(planted).toMatchObject({ subject: '100', dataset: 'demographics', variables: ['bmi', 'weight', 'height'], values: ['31.2', '80', '160'], change: 'new' });
    // Exactly one new finding; every earlier key is found again.
    expect(findings.filter((f) => f.change === 'new').map((f) => f.key)).toEqual([planted.key]);
    expect(findings.map((f) => f.key).sort()).toEqual([...shippedKeys, planted.key].sort());
    expect(run.summary).toMatchObject({ new: 1, resolved: 0 });
    plantedKey = planted.key;
  }, 180_000);

  it('treats blanks as REDCap does, and keys a finding by its record and event, not its line or value', async () => {
    const copy = lines.map((l) => ({ ...l })).reverse();
    const line = (record: string, event: string) => copy.find((l) => l.study_id === record && l.redcap_event_name === event)!;
    // Another wrong value on the planted record: the same discrepancy, still open.
    line('100', 'enrollment_arm_1').bmi = '31.9';
    // An input blank: REDCap's calculation is blank, so the saved 27.1 is wrong.
    line('220', 'enrollment_arm_1').weight = '';
    // Inputs present, value never calculated (blank): wrong, REDCap's rule H would fill it in.
    line('304', 'enrollment_arm_2').bmi2 = '';
    // An input blank and the value blank; a height of 0 and the value blank: both right.
    Object.assign(line('100', 'enrollment_arm_1'), { height2: '', bmi2: '' });
    Object.assign(line('220', 'enrollment_arm_1'), { height2: '0', bmi2: '' });
    const { rules, at, h } = await runOn(writeCopy('blanks.csv', copy));
    const [bmi, bmi2] = calcs as [Calc, Calc];
    expect(expectedH(copy, header, dictionary, bmi)).toEqual(['100/enrollment_arm_1', '220/enrollment_arm_1']);
    expect(expectedH(copy, header, dictionary, bmi2)).toEqual(['304/enrollment_arm_2']);
    for (const c of calcs) {
      expect(rules.get(ruleOf(c))!.issues, c.field).toBe(expectedH(copy, header, dictionary, c).length);
      expect(h(c).map(at).sort(), c.field).toEqual(expectedH(copy, header, dictionary, c));
    }
    const again = h(bmi).find((f) => f.subject === '100')!;
    expect({ key: again.key, change: again.change, values: again.values }).toEqual({ key: plantedKey, change: 'open', values: ['31.9', '80', '160'] });
    expect(h(bmi).find((f) => f.subject === '220')).toMatchObject({ change: 'new', values: ['27.1', '', '156'] });
    expect(h(bmi2)[0]).toMatchObject({ subject: '304', change: 'new', values: ['', '90', '160'] });
  }, 180_000);
});
