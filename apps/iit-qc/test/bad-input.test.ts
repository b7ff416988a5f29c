import { TEST_TOKEN } from '@fanout/kit/testing';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    await t.api();
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
});
