import { TEST_TOKEN } from '@fanout/kit/testing';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@fanout/testdb';
import { PILOT, qcTest, type QcTest } from './harness.ts';

describe('bad input is refused with a 4xx naming the problem, and nothing of it is stored', () => {
  let t: QcTest;
  let studyId: string;

  const stored = async () => (await t.json('GET', `/studies/${studyId}/datasets`)).datasets.length as number;
  const incoming = () => {
    try {
      return readdirSync(join(t.storageDir, 'incoming')).length;
    } catch {
      return 0;
    }
  };

  beforeAll(async () => {
    t = await qcTest();
    await t.api({ IIT_MAX_INFLATED_BYTES: 4 * 1024 * 1024 });
    studyId = await t.study('bad input', 'sdtm');
    expect((await t.upload(studyId, 'ta.xpt', readFileSync(join(PILOT, 'ta.xpt')))).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  it('refuses a corrupt XPT: truncated, or not an XPT at all', async () => {
    const ae = readFileSync(join(PILOT, 'ae.xpt'));
    const truncated = await t.upload(studyId, 'ae.xpt', ae.subarray(0, 200_000 + 37));
    expect(truncated.status).toBe(400);
    const body = (await truncated.json()) as any;
    expect(body.error.message).toMatch(/corrupt SAS transport file: .*(truncated|mid-record|incomplete)/);
    expect(body.error.issues[0]).toMatchObject({ field: 'body.file' });
    const garbage = await t.upload(studyId, 'dm.xpt', new TextEncoder().encode('USUBJID,AGE\n1,2\n'.repeat(100)));
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as any).error.message).toMatch(/not a SAS transport \(XPORT v5\) file/);
    // A corrupt record deep inside: the header is fine, the data ends mid-observation.
    const damaged = Buffer.from(ae);
    const tail = damaged.subarray(0, damaged.length - 80 * 3 - 11);
    expect((await t.upload(studyId, 'ae.xpt', tail)).status).toBe(400);
    expect(await stored()).toBe(1);
    expect(incoming()).toBe(0);
  });

  it("refuses a dataset whose records' DOMAIN is not the domain its name says, keeping nothing", async () => {
    const own = await t.study('domains', 'sdtm');
    const dm = readFileSync(join(PILOT, 'dm.xpt'));
    await refused(await t.upload(own, 'dm.xpt', dm, { name: 'AE' }), 400, 'body.name', 'domain_mismatch', /records are of the domain DM \(its DOMAIN variable\), but the dataset is named AE/);
    const csv = new TextEncoder().encode('STUDYID,DOMAIN,USUBJID,AETERM\nX,DM,01-701-1015,HEADACHE\n');
    await refused(await t.upload(own, 'ae.csv', csv), 400, 'body.file', 'domain_mismatch', /domain DM .* named AE/);
    expect((await t.json('GET', `/studies/${own}/datasets`)).datasets).toEqual([]);
    // A split dataset is named from its domain: LBXX's records are LB's.
    expect((await t.upload(own, 'lbxx.csv', new TextEncoder().encode('STUDYID,DOMAIN,USUBJID,LBTESTCD\nX,LB,01-701-1015,ALT\n'))).status).toBe(201);
    expect((await t.json('GET', `/studies/${own}/datasets`)).datasets).toEqual([expect.objectContaining({ name: 'LBXX', domain: 'LB' })]);
    // With define.xml naming the dataset's domain, the records must be of it.
    const define = new TextEncoder().encode('<?xml version="1.0"?><ODM><Study><MetaDataVersion><ItemGroupDef OID="IG.AE" Name="AE" Domain="AE"/></MetaDataVersion></Study></ODM>');
    expect((await t.upload(own, 'define.xml', define)).status).toBe(201);
    await refused(await t.upload(own, 'ae.csv', csv), 400, 'body.file', 'domain_mismatch', /domain DM .* define\.xml gives AE the domain AE/);
    expect(incoming()).toBe(0);
  });

  it('refuses a CSV with a wrong header, and one with a malformed line', async () => {
    const wrong = await t.upload(studyId, 'ae.csv', new TextEncoder().encode('STUDYID,Subject Id,AETERM\nX,01-701-1015,HEADACHE\n'));
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as any).error).toMatchObject({ code: 'invalid_file', message: expect.stringContaining('"Subject Id" (column 2) is not an SDTM variable name') });
    const noSubject = await t.upload(studyId, 'ae.csv', new TextEncoder().encode('STUDYID,AETERM\nX,HEADACHE\n'));
    expect(((await noSubject.json()) as any).error.message).toContain('no USUBJID column');
    const ragged = await t.upload(studyId, 'ae.csv', new TextEncoder().encode('STUDYID,USUBJID,AETERM\nX,1,A\nX,2\n'));
    expect(ragged.status).toBe(400);
    expect(((await ragged.json()) as any).error.message).toMatch(/not a readable CSV file \(line 3\)/);
    expect(await stored()).toBe(1);
  });

  it('refuses a rule with a CEL syntax error, naming the rule and the position', async () => {
    const res = await t.call('POST', `/studies/${studyId}/rule-sets`, {
      body: { source: 'name: broken\nrules:\n  - id: AE07\n    scope: AE\n    level: record\n    severity: error\n    message: start after end\n    condition: |\n      dateAfter(row.AESTDTC, row.AEENDTC) &&\n        && true\n' },
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as any;
    expect(error.code).toBe('invalid_rule_set');
    expect(error.issues[0]).toMatchObject({ field: 'body.rules.0.condition', rule: 'cel_error' });
    expect(error.issues[0].message).toMatch(/^rule AE07: .+ at line 2, column 3 \(file line 10\)$/);
    expect((await t.json('GET', `/studies/${studyId}/rule-sets`)).ruleSets).toEqual([]);
  });

  it('refuses a study-level rule whose parameters are not what it reads (an outlier threshold of "abc" found nothing, silently)', async () => {
    const rule = (params: string) => ({ source: `name: p\nrules:\n  - id: S1\n    scope: LB\n    level: study\n    kind: outlier\n    severity: warning\n    message: m\n    params: ${params}\n` });
    for (const [params, field] of [
      ['{ variable: LBSTRESN, sd: abc }', 'body.rules.0.params.sd'],
      ['{ variable: LBSTRESN, sd: 0 }', 'body.rules.0.params.sd'],
      ['{ variable: LBSTRESN, groupBy: { a: 1 } }', 'body.rules.0.params.groupBy'],
      ['{ variable: [LBSTRESN] }', 'body.rules.0.params.variable'],
    ] as const) {
      const res = await t.call('POST', `/studies/${studyId}/rule-sets`, { body: rule(params) });
      expect(res.status, params).toBe(400);
      expect(((await res.json()) as any).error.issues.map((i: { field: string }) => i.field), params).toEqual([field]);
    }
    const keys = await t.call('POST', `/studies/${studyId}/rule-sets`, {
      body: { source: 'name: k\nrules:\n  - id: U1\n    scope: DM\n    level: study\n    kind: unique\n    severity: error\n    message: m\n    params: { keys: [{ a: 1 }] }\n' },
    });
    expect(keys.status).toBe(400);
    expect(((await keys.json()) as any).error.issues[0].field).toBe('body.rules.0.params.keys');
  });

  it('refuses a rule naming an unknown domain', async () => {
    const res = await t.call('POST', `/studies/${studyId}/rule-sets`, {
      body: { source: 'name: typo\nrules:\n  - id: XX1\n    scope: AEE\n    level: record\n    severity: error\n    message: m\n    condition: row.A == "x"\n' },
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as any;
    expect(error.issues).toEqual([{ field: 'body.rules.0.scope', rule: 'unknown_domain', message: 'rule XX1: unknown SDTM domain "AEE"' }]);
  });

  it('refuses a 500 MB upload over the limit with 413, keeping nothing', async () => {
    const url = new URL(`${t.apiUrl}/api/iit/studies/${studyId}/datasets`);
    const boundary = 'fanout-boundary';
    const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.xpt"\r\ncontent-type: application/octet-stream\r\n\r\n`);
    const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(500 * 1024 * 1024) } }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.write(head);
      const chunk = Buffer.alloc(1024 * 1024, 0x41);
      let sent = 0;
      const pump = () => {
        while (sent < 20 && req.write(chunk)) sent++;
        if (sent < 20) req.once('drain', pump);
      };
      pump();
    });
    expect(status.status).toBe(413);
    expect(JSON.parse(status.body).error).toMatchObject({ code: 'payload_too_large', message: expect.stringContaining('larger than the limit') });
    expect(await stored()).toBe(1);
    expect(incoming()).toBe(0);
  });

  const refused = async (res: Response, status: number, field: string, rule: string, says: RegExp) => {
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(status);
    expect(body.error.issues, JSON.stringify(body)).toEqual(expect.arrayContaining([expect.objectContaining({ field, rule })]));
    expect(body.error.message).toMatch(says);
  };
  const multipart = (disposition: string, content: string) => {
    const boundary = 'fanout-boundary';
    const body = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; ${disposition}\r\ncontent-type: text/csv\r\n\r\n${content}\r\n--${boundary}--\r\n`);
    return fetch(`${t.apiUrl}/api/iit/studies/${studyId}/datasets`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
  };

  it('refuses a gzip upload that inflates past IIT_MAX_INFLATED_BYTES with 413, keeping nothing (a 40 KB file of 40 MB)', async () => {
    const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x41), { level: 9 });
    expect(bomb.length).toBeLessThan(100_000);
    await refused(await t.upload(studyId, 'dm.csv.gz', bomb), 413, 'body.file', 'too_big', /inflates to more than the limit of 4194304 bytes/);
    expect(await stored()).toBe(1);
    expect(incoming()).toBe(0);
  });

  it('refuses a NUL character where PostgreSQL stores none (a value, a file name, a YAML escape) with a 400, not a 500', async () => {
    await refused(await t.upload(studyId, 'dm.csv', new TextEncoder().encode('STUDYID,USUBJID,AGE\nX,01\u0000,3\n')), 400, 'body.file', 'nul_character', /record 1 \(USUBJID\) holds the NUL character/);
    await refused(await multipart(`filename*=UTF-8''dm%00x.csv`, 'STUDYID,USUBJID,AGE\nX,01,3\n'), 400, 'body.file.filename', 'invalid_filename', /control characters/);
    const rules = `name: probe\nrules:\n  - id: R1\n    scope: DM\n    level: record\n    severity: error\n    message: "bad\\0value"\n    condition: row.AGE == 1\n`;
    await refused(await t.call('POST', `/studies/${studyId}/rule-sets`, { body: { source: rules } }), 400, 'body.rules.0.message', 'nul_character', /NUL character/);
    // Half a character, from a YAML escape or from the JSON body itself: jsonb refuses it.
    const half = rules.replace('bad\\0value', 'half \\ud800 char');
    await refused(await t.call('POST', `/studies/${studyId}/rule-sets`, { body: { source: half } }), 400, 'body.rules.0.message', 'lone_surrogate', /well-formed Unicode/);
    await refused(await t.call('POST', `/studies/${studyId}/rule-sets`, { body: { source: 'name: x\ud800' } }), 400, 'body.source', 'lone_surrogate', /well-formed Unicode/);
    expect(await stored()).toBe(1);
    expect(incoming()).toBe(0);
  });

  it("refuses a run of another study's rule set, or of a study that is not the tenant's, through POST /tasks and POST /runs, and starts no task", async () => {
    const other = await t.study('another study', 'sdtm');
    expect((await t.upload(other, 'dm.csv', new TextEncoder().encode('USUBJID,SUBJID,SITEID,AGE\nS-1,1,701,60\n'))).status).toBe(201);
    const otherRules = await t.ruleSet(other, 'name: age\nrules:\n  - id: OLD\n    scope: DM\n    level: record\n    severity: warning\n    message: age over 50\n    condition: row.AGE > 50\n');
    const tasks = async () => ((await t.json('GET', '/tasks?limit=200')).tasks as unknown[]).length;
    const before = await tasks();
    await refused(await t.call('POST', '/tasks', { body: { input: { studyId, ruleSetId: otherRules } } }), 400, 'body.input.ruleSetId', 'other_study', /^body\.input\.ruleSetId: not a rule set of this study/);
    await refused(await t.call('POST', '/runs', { body: { studyId, ruleSetId: otherRules } }), 400, 'body.ruleSetId', 'other_study', /^body\.ruleSetId: not a rule set of this study/);
    // Another tenant's study is as unknown as an id made up, and so is a rule set that does not exist.
    await refused(await t.call('POST', '/tasks', { token: TEST_TOKEN.b, body: { input: { studyId: other, ruleSetId: otherRules } } }), 400, 'body.input.studyId', 'not_found', /no study/);
    await refused(await t.call('POST', '/runs', { body: { studyId: other, ruleSetId: randomUUID() } }), 400, 'body.ruleSetId', 'not_found', /no rule set/);
    expect(await tasks()).toBe(before);
    // The study's own rule set starts a run, its ids written in either case.
    expect((await t.call('POST', '/tasks', { body: { input: { studyId: other.toUpperCase(), ruleSetId: otherRules } } })).status).toBe(202);
    expect(await tasks()).toBe(before + 1);
  });

  it('refuses a run of a study with no datasets to check, through POST /tasks and POST /runs', async () => {
    const empty = await t.study('nothing uploaded', 'sdtm');
    const rules = await t.ruleSet(empty, 'name: age\nrules:\n  - id: OLD\n    scope: DM\n    level: record\n    severity: warning\n    message: age over 50\n    condition: row.AGE > 50\n');
    await refused(await t.call('POST', '/runs', { body: { studyId: empty, ruleSetId: rules } }), 400, 'body.studyId', 'no_data', /^body\.studyId: the study has no datasets to check: upload them first/);
    await refused(await t.call('POST', '/tasks', { body: { input: { studyId: empty, ruleSetId: rules } } }), 400, 'body.input.studyId', 'no_data', /no datasets to check/);
  });

  it("a run whose manager finds the study's data gone fails, its fan-in ends at once, and its run says why it is missing", async () => {
    const study = await t.study('data gone', 'sdtm');
    expect((await t.upload(study, 'dm.csv', new TextEncoder().encode('USUBJID,SUBJID,SITEID,AGE\nS-1,1,701,60\n'))).status).toBe(201);
    const rules = await t.ruleSet(study, 'name: age\nrules:\n  - id: OLD\n    scope: DM\n    level: record\n    severity: warning\n    message: age over 50\n    condition: row.AGE > 50\n');
    const runId = await t.run(study, rules);
    // Gone between the submit and the manager (no worker runs yet).
    await t.rt.db.pool.query('UPDATE qc_dataset SET current = false WHERE study_id = $1', [study]);
    await t.workers(1);
    const ended = await waitFor(async () => {
      const task = await t.json('GET', `/tasks/${runId}`);
      return task.status === 'failed' ? task : null;
    }, { timeoutMs: 60_000, message: 'the run failed' });
    expect(ended).toMatchObject({ stopReason: 'manager_failed', error: expect.stringContaining('the study has no datasets to check') });
    // Named in lists by its study and its rule set's version.
    expect(ended.summary).toBe('QC run: data gone · age v1');
    // Its fan-in is done (it was retried every half minute for as long as the task was kept).
    await waitFor(async () => (await t.rt.db.pool.query<{ done: boolean }>('SELECT fanin_round >= round AS done FROM fanout_task WHERE id = $1', [runId])).rows[0]!.done, {
      timeoutMs: 30_000,
      message: 'the fan-in done',
    });
    const missing = await t.call('GET', `/runs/${runId}`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.message).toMatch(/one whose manager failed never will: its task, GET \/tasks\/.*, says why/);
  });

  it('refuses a rule set whose YAML aliases expand without bound (an alias bomb) with a 400', async () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (const [prev, n] of [['a', 'b'], ['b', 'c'], ['c', 'd'], ['d', 'e'], ['e', 'f']]) lines.push(`${n}: &${n} [${Array(10).fill(`*${prev}`).join(',')}]`);
    await refused(await t.call('POST', `/studies/${studyId}/rule-sets`, { body: { source: `${lines.join('\n')}\nname: bomb\nrules: []\n` } }), 400, 'body', 'invalid_yaml', /not a usable rule set: .*alias/i);
    // An alias inside its own anchor parses to a list inside itself (it held the process at full CPU).
    await refused(await t.call('POST', `/studies/${studyId}/rule-sets`, { body: { source: 'a: &a [*a, *a]\nname: loop\nrules: []\n' } }), 400, 'body.a.0', 'invalid_yaml', /refers to itself/);
  });

  it('refuses a define.xml whose dataset or variable has no Name, naming it', async () => {
    const define = (inner: string) => new TextEncoder().encode(`<?xml version="1.0"?><ODM><Study><MetaDataVersion>${inner}</MetaDataVersion></Study></ODM>`);
    await refused(await t.upload(studyId, 'define.xml', define('<ItemGroupDef OID="IG.DM"/>')), 400, 'body.file', 'invalid_define', /ItemGroupDef IG\.DM has no Name attribute/);
    await refused(await t.upload(studyId, 'define.xml', define('<ItemGroupDef OID="IG.DM" Name="DM"><ItemRef ItemOID="IT.1"/></ItemGroupDef><ItemDef OID="IT.1" DataType="text"/>')), 400, 'body.file', 'invalid_define', /ItemDef IT\.1 has no Name attribute/);
    // An element where an attribute of text belongs (it was a 500: "toUpperCase is not a function").
    await refused(await t.upload(studyId, 'define.xml', define('<ItemGroupDef OID="IG.DM" Name="DM"><Domain><b/></Domain></ItemGroupDef>')), 400, 'body.file', 'invalid_define', /ItemGroupDef IG\.DM has Domain as an element/);
    await refused(
      await t.upload(studyId, 'define.xml', define('<ItemGroupDef OID="IG.DM" Name="DM"><ItemRef ItemOID="IT.1"/></ItemGroupDef><ItemDef OID="IT.1" Name="AGE"><DataType><b/></DataType></ItemDef>')),
      400,
      'body.file',
      'invalid_define',
      /ItemDef IT\.1 has DataType as an element/,
    );
    expect(await stored()).toBe(1);
  });
});
