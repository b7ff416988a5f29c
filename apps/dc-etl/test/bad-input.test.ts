import { TEST_TOKEN } from '@fanout/kit/testing';
import { readdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { dataPath, etlTest, fileOf, json, postLoad, runLoad, specText, type EtlTest } from './harness.ts';

const covid = fileOf(dataPath('medicaldata/covid_testing_deid.csv.gz'));
const small = { name: 'tests.csv', bytes: Buffer.from('subject_id,pan_day,test_id,age\n1,4,covid,30\n2,5,covid,NA\n') };
const smallSpec = JSON.stringify({
  version: '2',
  target: 'small',
  nullTokens: ['NA'],
  columns: [
    { name: 'subject_id', type: 'integer' },
    { name: 'pan_day', type: 'integer' },
    { name: 'test_id', type: 'text' },
    { name: 'age', type: 'number' },
  ],
  rules: [{ id: 'adult', assert: 'age == null || age >= 18' }],
});

async function expectError(res: Response, status: number, field: string, rule: string, says?: RegExp) {
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(status);
  const issue = body.error.issues.find((i: any) => i.field === field);
  expect(issue, `${field} in ${JSON.stringify(body.error.issues)}`).toBeDefined();
  expect(issue.rule).toBe(rule);
  if (says) expect(body.error.message).toMatch(says);
}

/**
 * Posts a file of `bytes` as a multipart upload without a length (chunked), a piece at a time as
 * the socket takes it: the answer, and how much had been sent when it came.
 */
function uploadChunked(url: string, bytes: number): Promise<{ status: number; body: string; sent: number }> {
  return new Promise((resolve, reject) => {
    const boundary = 'chunked-upload';
    let sent = 0;
    let answered = false;
    const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } });
    req.on('response', (res) => {
      answered = true;
      const at = sent;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, sent: at }));
    });
    // The server may close the connection once it answered: only an error before the answer fails.
    req.on('error', (error) => (answered ? undefined : reject(error)));
    req.write(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.csv"\r\ncontent-type: text/csv\r\n\r\n`);
    const piece = Buffer.alloc(64 * 1024, 'a');
    const pump = () => {
      while (!answered && sent < bytes) {
        sent += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      if (!answered) req.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
  });
}

async function nothingLeft(t: EtlTest) {
  expect((await t.pool.query('SELECT count(*)::int AS n FROM etl_target')).rows[0].n).toBe(0);
  expect((await t.pool.query('SELECT count(*)::int AS n FROM etl_load')).rows[0].n).toBe(0);
  expect((await t.pool.query('SELECT count(*)::int AS n FROM etl_upload')).rows[0].n).toBe(0);
  const incoming = join(t.storageDir, 'incoming');
  expect(readdirSync(incoming)).toEqual([]);
}

describe('bad input', () => {
  it('a binary file named .csv, a wrong header, an unknown column, an invalid CEL rule, a broken spec, an upload over the limit: a 4xx naming the problem, nothing kept', async () => {
    await using t = await etlTest();
    await t.api({ ETL_MAX_UPLOAD_BYTES: 200_000 });
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), Buffer.alloc(500, 7)]);
    await expectError(await postLoad(t, { name: 'data.csv', bytes: png }, smallSpec), 400, 'body.file', 'binary_file', /not text: it has binary bytes/);
    await expectError(await postLoad(t, { name: 'data.csv', bytes: Buffer.from('a,b,c\n1,2,3\n') }, smallSpec), 400, 'body.file.header', 'header_mismatch', /has none of the spec's columns/);
    const twice = { name: 'twice.csv', bytes: Buffer.from('subject_id,pan_day,age,test_id,age\n1,4,30,covid,31\n') };
    await expectError(await postLoad(t, twice, smallSpec), 400, 'body.file.header', 'duplicate_column', /names "age" 2 times \(columns 3, 5\)/);
    const unknown = JSON.parse(smallSpec);
    unknown.columns[3].source = 'age_years';
    await expectError(await postLoad(t, small, JSON.stringify(unknown)), 400, 'body.spec.columns.3.source', 'unknown_column', /no column "age_years"/);
    const badRule = JSON.parse(smallSpec);
    badRule.rules[0].assert = 'age >= 18 &&';
    await expectError(await postLoad(t, small, JSON.stringify(badRule)), 400, 'body.spec.rules.0.assert', 'invalid_rule', /rule adult/);
    const unknownVariable = JSON.parse(smallSpec);
    unknownVariable.rules[0].assert = 'weight > 0';
    await expectError(await postLoad(t, small, JSON.stringify(unknownVariable)), 400, 'body.spec.rules.0.assert', 'invalid_rule', /unknown variable "weight"/);
    await expectError(await postLoad(t, small, 'target: [unclosed'), 400, 'body.spec', 'invalid_syntax', /not valid YAML or JSON at line 1/);
    const badType = JSON.parse(smallSpec);
    badType.columns[1].type = 'int';
    await expectError(await postLoad(t, small, JSON.stringify(badType)), 400, 'body.spec.columns.1.type', 'invalid_value');
    await expectError(await postLoad(t, small, ''), 400, 'body.spec', 'required');
    await expectError(await postLoad(t, { name: 'big.csv', bytes: Buffer.alloc(300_000, 'a') }, smallSpec), 413, 'body.file', 'too_big', /larger than the limit of 200000 bytes/);
    await expectError(await postLoad(t, small, smallSpec, { chunkRecords: 'ten' }), 400, 'body.chunkRecords', 'invalid_type');
    await expectError(await postLoad(t, small, smallSpec, { chunkRecords: '0' }), 400, 'body.chunkRecords', 'too_small');
    // Sent without a length, 32 MB against the limit of 200 KB: the 413 comes once the limit is
    // passed, not after the client sent the rest.
    const chunked = await uploadChunked(`${t.apiUrl}/api/etl/uploads`, 32 * 1024 * 1024);
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body).error.issues).toEqual([expect.objectContaining({ field: 'body.file', rule: 'too_big' })]);
    expect(chunked.sent).toBeLessThan(16 * 1024 * 1024);
    await nothingLeft(t);
    // A spec stored on its own is checked the same way.
    const form = new FormData();
    form.set('file', new Blob([JSON.stringify(unknownVariable)]), 'spec.json');
    await expectError(await fetch(`${t.apiUrl}/api/etl/specs`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}` }, body: form }), 400, 'body.spec.rules.0.assert', 'invalid_rule');
  });

  it('a NUL character where PostgreSQL stores none (a spec value, a file name), a YAML alias bomb, a workbook whose shared strings inflate past memory: a 400, never a 500, nothing kept', async () => {
    await using t = await etlTest();
    await t.api();
    const postSpec = (text: string) => {
      const form = new FormData();
      form.set('file', new Blob([text]), 'spec.yaml');
      return fetch(`${t.apiUrl}/api/etl/specs`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}` }, body: form });
    };
    const nul = smallSpec.replace('"NA"', '"NA","x\\u0000"');
    await expectError(await postSpec(nul), 400, 'body.spec.nullTokens.1', 'nul_character', /^body\.spec\.nullTokens\.1: must not contain the NUL character/);
    await expectError(await postLoad(t, small, nul), 400, 'body.spec.nullTokens.1', 'nul_character', /NUL character/);
    // Half a character from a "\ud800" escape (jsonb refuses it), and NUL in a comment (the text is stored as it came).
    const half = smallSpec.replace('"NA"', '"NA","x\\ud800"');
    await expectError(await postSpec(half), 400, 'body.spec.nullTokens.1', 'lone_surrogate', /well-formed Unicode/);
    await expectError(await postLoad(t, small, half), 400, 'body.spec.nullTokens.1', 'lone_surrogate', /well-formed Unicode/);
    await expectError(await postSpec(`# a\u0000b\n${smallSpec}`), 400, 'body.spec', 'nul_character', /line 1.*NUL character/);
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (const [prev, n] of [['a', 'b'], ['b', 'c'], ['c', 'd'], ['d', 'e']]) lines.push(`${n}: &${n} [${Array(10).fill(`*${prev}`).join(',')}]`);
    await expectError(await postSpec(`${lines.join('\n')}\nversion: "2"\n`), 400, 'body.spec', 'invalid_syntax', /not a usable spec: .*alias/i);
    // An alias inside its own anchor: fourteen characters that parse to a list inside itself, and
    // held the whole process (every app of the platform) at full CPU while its text was checked.
    await expectError(await postSpec('a: &a [*a, *a]\n'), 400, 'body.spec.a.0', 'invalid_syntax', /^body\.spec\.a\.0: refers to itself \(an alias inside its own anchor\); a spec is a tree$/);
    await expectError(await postLoad(t, small, 'target: t\nextra: &x { again: *x }\n'), 400, 'body.spec.extra.again', 'invalid_syntax', /refers to itself/);
    const boundary = 'fanout-boundary';
    const named = Buffer.concat([
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename*=UTF-8''t%00.csv\r\ncontent-type: text/csv\r\n\r\n`),
      small.bytes,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const upload = await fetch(`${t.apiUrl}/api/etl/uploads`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: named });
    await expectError(upload, 400, 'body.file.filename', 'invalid_filename', /control characters/);
    // 270 KB whose shared strings inflate to 270 MB, which the workbook reader keeps in memory (a
    // 1.4 MB one took the process 52 s of CPU and 816 MB to read its header): refused from the
    // zip's directory, before anything is inflated.
    const sharedStrings = fileOf(new URL('fixtures/shared-strings-bomb.xlsx', import.meta.url).pathname);
    await expectError(await postLoad(t, sharedStrings, smallSpec), 400, 'body.file', 'too_big', /shared strings and styles inflate to 283115\d+ bytes, over the 268435456/);
    await nothingLeft(t);
  });

  it('a file that expands past ETL_MAX_SOURCE_BYTES (a gzip bomb) or a workbook row past Excel\'s last fails its load with the reason, leaving no prepared source behind', async () => {
    await using t = await etlTest();
    await t.api();
    await t.workers(1, { ETL_MAX_SOURCE_BYTES: 4 * 1024 * 1024 });
    const rows = Buffer.from('subject_id,pan_day,test_id,age\n' + '1,4,covid,30\n'.repeat(4_000_000));
    const bomb = gzipSync(rows, { level: 9 });
    expect(bomb.length).toBeLessThan(rows.length / 100);
    const inflated = await runLoad(t, { name: 'bomb.csv.gz', bytes: bomb }, smallSpec);
    expect(inflated).toMatchObject({ status: 'failed', error: expect.stringMatching(/the file expands to more than 4194304 bytes \(ETL_MAX_SOURCE_BYTES\)/) });
    // A hand-made workbook (1.6 KB) whose second row is numbered 30,000,000: written out, its gap
    // would be as many blank lines.
    const gap = await runLoad(t, fileOf(new URL('fixtures/row-gap.xlsx', import.meta.url).pathname), JSON.stringify({ version: '2', target: 'gap', columns: [{ name: 'subject_id', type: 'integer' }, { name: 'age', type: 'number' }] }));
    expect(gap).toMatchObject({ status: 'failed', error: expect.stringMatching(/a row numbered 30000000 after row 2 \(rows go up to 1048576, in order\)/) });
    // Neither left a prepared source behind.
    const prepared = readdirSync(join(t.storageDir, 'loads'), { recursive: true }).map(String).filter((f) => f.includes('source.csv'));
    expect(prepared).toEqual([]);
  });

  it('a load over its reject threshold fails with the reason and publishes nothing; discarding it (or a published load) leaves nothing behind; tenants stay apart', async () => {
    await using t = await etlTest();
    await t.api();
    await t.workers(1);
    const failed = await runLoad(t, covid, specText('covid.yaml', { thresholds: { maxRejectRate: 0.0001 } }), { chunkRecords: '4000' });
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/0\.04% of the rows were rejected \(6 of 15524\), over the limit of 0\.01% \(thresholds\.maxRejectRate\); nothing was published/);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM etl_target')).rows[0].n).toBe(0);
    const refused = await t.call('POST', `/loads/${failed.id}/publish`);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as any).error.message).toMatch(/the load is failed; only a checked load \(ready\) can be published/);
    // As the API's document says (a client generated from it knows the answer).
    const document = await json(t.call('GET', '/openapi.json'));
    for (const action of ['publish', 'discard']) {
      const [, operations] = Object.entries(document.paths as Record<string, any>).find(([path]) => path.endsWith(`/loads/{id}/${action}`))!;
      expect(operations.post.responses['409'], action).toBeDefined();
    }
    // Its rejects are there to look at until it is discarded.
    expect((await json(t.call('GET', `/loads/${failed.id}/rejects`))).rejects).toHaveLength(6);

    // Another tenant sees none of it.
    for (const path of [`/loads/${failed.id}`, `/loads/${failed.id}/rejects`, `/loads/${failed.id}/rejects.csv`, `/loads/${failed.id}/profile`, `/loads/${failed.id}/duplicates`, `/loads/${failed.id}/chunks`]) {
      expect((await t.call('GET', path, { token: TEST_TOKEN.b })).status, path).toBe(404);
    }
    expect((await t.call('POST', `/loads/${failed.id}/discard`, { token: TEST_TOKEN.b })).status).toBe(404);
    expect((await json(t.call('GET', '/loads', { token: TEST_TOKEN.b }))).loads).toEqual([]);

    const published = await runLoad(t, small, smallSpec);
    expect(published.status).toBe('published');
    expect(published.manifest).toMatchObject({ rowsIn: 2, clean: 2, rejected: 0, published: 2, spec: { version: '2' }, file: { name: 'tests.csv', bytes: small.bytes.length } });

    for (const load of [failed, published]) expect(await json(t.call('POST', `/loads/${load.id}/discard`))).toEqual({ id: load.id, status: 'discarded' });
    const left = await t.pool.query(`
      SELECT (SELECT count(*) FROM etl_reject)::int AS rejects, (SELECT count(*) FROM etl_chunk)::int AS chunks,
             (SELECT count(*) FROM etl_profile)::int AS profile, (SELECT count(*) FROM etl_duplicate)::int AS duplicates,
             (SELECT count(*) FROM pg_tables WHERE schemaname = 'etl_stage')::int AS staging`);
    expect(left.rows[0]).toEqual({ rejects: 0, chunks: 0, profile: 0, duplicates: 0, staging: 0 });
    const target = (await t.pool.query(`SELECT table_name FROM etl_target WHERE name = 'small'`)).rows[0].table_name;
    expect((await t.pool.query(`SELECT count(*)::int AS n FROM etl_pub."${target}"`)).rows[0].n).toBe(0);
    expect(readdirSync(join(t.storageDir, 'uploads'))).toEqual([]);
    expect(readdirSync(join(t.storageDir, 'loads'))).toEqual([]);
    // Its record stays, as its manifest says (its chunk rows are gone), and says when it went.
    expect(await json(t.call('GET', `/loads/${published.id}`))).toMatchObject({ status: 'discarded', rowsIn: 2, clean: 2, rejected: 0 });
    const facts = new Map(((await json(t.call('GET', `/loads/${published.id}/overview`))).facts as { name: string; value: string }[]).map((f) => [f.name, f.value]));
    expect(facts.get('Rows in')).toBe('2');
    expect(facts.get('Chunks loaded')).toBe('1 of 1');
    expect(facts.get('Discarded at')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);

    // Its upload went with it: a load of it asked for again is refused saying so (not with the
    // server's path), and so are another tenant's upload and spec; no task is started.
    const { upload_id: uploadId, spec_id: specId } = (await t.pool.query('SELECT upload_id, spec_id FROM etl_load WHERE id = $1', [published.id])).rows[0];
    const tasks = async () => ((await json(t.call('GET', '/tasks?limit=200'))) as { tasks: unknown[] }).tasks.length;
    const before = await tasks();
    const again = await t.call('POST', '/tasks', { body: { input: { uploadId, specId } } });
    const body = (await again.json()) as { error: { message: string; issues: unknown[] } };
    expect(again.status).toBe(400);
    expect(body.error.issues).toEqual([{ field: 'body.input.uploadId', rule: 'gone', message: expect.stringMatching(/^the upload is no longer stored .*upload the file again$/) }]);
    expect(body.error.message).not.toContain(t.storageDir);
    const theirs = await t.call('POST', '/tasks', { token: TEST_TOKEN.b, body: { input: { uploadId, specId } } });
    expect(theirs.status).toBe(400);
    expect(((await theirs.json()) as { error: { issues: { field: string; rule: string }[] } }).error.issues.map((i) => [i.field, i.rule])).toEqual([
      ['body.input.uploadId', 'not_found'],
      ['body.input.specId', 'not_found'],
    ]);
    // A file stored apart from a spec that reads columns it does not have: refused as POST /loads
    // refuses them sent together, naming the spec's column.
    const store = async (path: string, name: string, bytes: Uint8Array) => {
      const form = new FormData();
      form.set('file', new Blob([bytes]), name);
      return json(fetch(`${t.apiUrl}/api/etl${path}`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN.a}` }, body: form }));
    };
    const { uploadId: smallUpload } = await store('/uploads', small.name, small.bytes);
    const { specId: covidSpec } = await store('/specs', 'covid.yaml', Buffer.from(specText('covid.yaml')));
    const mismatch = await t.call('POST', '/tasks', { body: { input: { uploadId: smallUpload, specId: covidSpec } } });
    const refusal = (await mismatch.json()) as { error: { message: string; issues: { field: string; rule: string; message: string }[] } };
    expect(mismatch.status).toBe(400);
    expect(refusal.error.message).toBe('body.input.specId: spec.columns.1.name: the file has no column "fake_first_name" (its header: "subject_id", "pan_day", "test_id", "age") (unknown_column)');
    expect(refusal.error.issues.every((i) => i.field === 'body.input.specId' && i.rule === 'unknown_column')).toBe(true);
    expect(refusal.error.issues.length).toBeGreaterThan(5);
    expect(await tasks()).toBe(before);
    // One that suits its spec starts, and without a label (as the console's panel sends it) is
    // listed by its file and table, as POST /loads lists it.
    const { specId: fitting } = await store('/specs', 'small.json', Buffer.from(smallSpec));
    const started = await t.call('POST', '/tasks', { body: { input: { uploadId: smallUpload, specId: fitting } } });
    expect(started.status).toBe(202);
    const { id } = (await started.json()) as { id: string };
    expect(await json(t.call('GET', `/tasks/${id}`))).toMatchObject({ summary: 'tests.csv to small' });
  });
});
