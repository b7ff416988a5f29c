import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HIT_PAGE } from '../src/run/study-rules.ts';
import { qcTest, type QcTest } from './harness.ts';

// The fan-in reads a study-level rule's hits a page at a time: these rules flag more records than
// a page holds, and every one of them must come out once, with its subject's site.
const SUBJECTS = Array.from({ length: 20 }, (_, i) => ({ id: `S-${String(i + 1).padStart(2, '0')}`, site: i % 2 === 0 ? '701' : '702' }));
const SAME_TERM = 60;
const ORPHANS = 30;
const ORPHAN_RECORDS = 36;

const RULES = `name: fan-in pages
rules:
  - id: AE-DUP
    scope: AE
    level: study
    kind: unique
    severity: warning
    message: The same adverse event twice for a subject
    params: { keys: [USUBJID, AETERM] }
  - id: ORPHAN
    scope: '*'
    level: study
    kind: orphan
    severity: error
    message: Subject is not present in DM domain
`;

describe('the fan-in pages what a study-level rule flags', () => {
  let t: QcTest;
  let runId: string;

  beforeAll(async () => {
    t = await qcTest();
    await t.api();
    await t.workers(1);
    const studyId = await t.study('many study-level findings', 'sdtm');
    const dm = ['USUBJID,SUBJID,SITEID', ...SUBJECTS.map((s, i) => `${s.id},${1000 + i},${s.site}`)].join('\n');
    const ae = ['USUBJID,AESEQ,AETERM'];
    for (const s of SUBJECTS) for (let seq = 1; seq <= SAME_TERM; seq++) ae.push(`${s.id},${seq},HEADACHE`);
    for (let o = 1; o <= ORPHANS; o++) for (let seq = 1; seq <= ORPHAN_RECORDS; seq++) ae.push(`O-${String(o).padStart(2, '0')},${seq},NAUSEA ${seq}`);
    for (const [name, text] of [['dm.csv', dm], ['ae.csv', ae.join('\n')]] as const) {
      expect((await t.upload(studyId, name, new TextEncoder().encode(text))).status).toBe(201);
    }
    runId = await t.run(studyId, await t.ruleSet(studyId, RULES));
    await t.waitRun(runId);
  }, 180_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  it('records every duplicate, over more than one page, each with its subject site from DM', async () => {
    const expected = SUBJECTS.length * (SAME_TERM - 1);
    expect(expected).toBeGreaterThan(HIT_PAGE);
    const findings = await t.findings(runId, { rule: 'AE-DUP' });
    expect(findings).toHaveLength(expected);
    expect(new Set(findings.map((f) => f.key)).size).toBe(expected);
    const siteOf = new Map(SUBJECTS.map((s) => [s.id, s.site]));
    for (const f of findings) expect([f.subject, f.site]).toEqual([f.subject, siteOf.get(f.subject)]);
    expect((await t.rules(runId)).get('AE-DUP')).toMatchObject({ status: 'issues', issues: expected, subjects: SUBJECTS.length });
  });

  it('records every record of a subject missing from DM, over more than one page, without a site', async () => {
    const expected = ORPHANS * ORPHAN_RECORDS;
    expect(expected).toBeGreaterThan(HIT_PAGE);
    const findings = await t.findings(runId, { rule: 'ORPHAN' });
    expect(findings).toHaveLength(expected);
    expect(new Set(findings.map((f) => `${f.subject}|${f.recno}`)).size).toBe(expected);
    expect(findings.every((f) => f.subject.startsWith('O-') && f.site === null)).toBe(true);
  });
});
