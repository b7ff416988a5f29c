import { describe, expect, it } from 'vitest';
import { consoleLogger, errorFields, maskedLogger, pinoLogger, redact, redactText, type Logger, type PinoLike } from '../src/runtime/logger.ts';

describe('errorFields', () => {
  it('reads the message, code and context of the plain objects pg-boss reports, not "[object Object]"', () => {
    const original = Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    // What pg-boss 12 emits for a failed fetch or supervision (manager.js): a copy, not the Error.
    const reported = { ...original, message: original.message, stack: original.stack, queue: 'asl_extract_child', worker: 'w-1' };
    const fields = errorFields(reported);
    expect(fields).toMatchObject({ error: 'Connection terminated unexpectedly', errorCode: 'ECONNRESET', queue: 'asl_extract_child', worker: 'w-1' });
    expect(fields.stack).toContain('Connection terminated');
    expect(JSON.stringify(fields)).not.toContain('[object Object]');
  });

  it('names a refused connection: an AggregateError with an empty message reports its errors', () => {
    const refused = new AggregateError(
      [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' })],
      '',
    );
    Object.assign(refused, { code: 'ECONNREFUSED' });
    expect(errorFields(refused)).toMatchObject({ error: 'connect ECONNREFUSED 127.0.0.1:5432; connect ECONNREFUSED ::1:5432', errorName: 'AggregateError', errorCode: 'ECONNREFUSED' });
  });

  it('keeps PostgreSQL’s code, table and constraint, and the cause', () => {
    const pgError = Object.assign(new Error('duplicate key value violates unique constraint "fanout_item_key"'), { code: '23505', table: 'fanout_item', constraint: 'fanout_item_key', severity: 'ERROR' });
    const wrapped = new Error('settle failed', { cause: pgError });
    expect(errorFields(pgError)).toMatchObject({ errorCode: '23505', table: 'fanout_item', constraint: 'fanout_item_key', severity: 'ERROR' });
    expect(errorFields(wrapped)).toMatchObject({ error: 'settle failed', cause: 'duplicate key value violates unique constraint "fanout_item_key"' });
  });

  it('describes what is not an Error at all', () => {
    expect(errorFields('boom')).toEqual({ error: 'boom' });
    expect(errorFields({ reason: 'nope' })).toEqual({ error: '{"reason":"nope"}' });
    expect(errorFields(undefined)).toEqual({ error: 'undefined' });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(errorFields(circular).error).toBe('an object with keys self');
  });
});

describe('masking credentials', () => {
  it('masks credentials in text: URL passwords (with or without a user), bearer and basic credentials, query strings, `name=value`', () => {
    expect(redactText('connect postgres://app:s3cret@db:5432/x failed')).toBe('connect postgres://app:[redacted]@db:5432/x failed');
    expect(redactText('redis://:s3cret@cache:6379')).toBe('redis://:[redacted]@cache:6379');
    expect(redactText('Authorization: Bearer abc.def.ghi')).toBe('Authorization: Bearer [redacted]');
    expect(redactText('authorization: Basic dXNlcjpwYXNz')).toBe('authorization: Basic [redacted]');
    expect(redactText('GET https://api.example.org/v1?q=1&api_key=K123&access_token=T456#x')).toBe('GET https://api.example.org/v1?q=1&api_key=[redacted]&access_token=[redacted]#x');
    expect(redactText('login with password=hunter2, then apiKey: "k-123"')).toBe('login with password=[redacted], then apiKey: "[redacted]"');
    expect(redactText('{"password":"hunter2","user":"ann"}')).toBe('{"password":"[redacted]","user":"ann"}');
    expect(redactText('sent with Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc and Basic YWxhZGRpbjpvcGVuc2VzYW1l')).toBe('sent with Bearer [redacted] and Basic [redacted]');
    // Text without credentials is untouched; NUL characters (which PostgreSQL's text cannot hold) go.
    for (const plain of ['the password was wrong; retry in 5 s', 'Basic plan does not include exports', 'failed basic validation', 'the bearer of bad news', 'GET /search?key=blue-shoes&page=2']) {
      expect(redactText(plain)).toBe(plain);
    }
    expect(redactText('page\u0000 1')).toBe('page 1');
  });

  it('masks fields named like credentials at any depth, and turns what JSON cannot write into data it can', () => {
    const deep: Record<string, unknown> = { level: 0 };
    let at = deep;
    for (let i = 1; i <= 12; i++) at = (at.next = { level: i, password: `p${i}`, url: `postgres://u:p${i}@h/db` }) as Record<string, unknown>;
    const circular: Record<string, unknown> = { name: 'loop' };
    circular.self = circular;
    const shared = { token: 't' };
    const throwing = Object.defineProperty({ ok: 1 }, 'broken', { enumerable: true, get: () => { throw new Error('boom'); } });
    const masked = redact({
      headers: { 'x-api-key': 'k', 'proxy-authorization': 'Basic x', cookie: 'c', 'content-type': 'json' },
      aws: { secretAccessKey: 's', accessKeyId: 'AKIA', secretKey: 'k', secretName: 'prod/db', secretArn: 'arn:aws:secretsmanager:x' },
      credentials: { key: 'private' },
      count: 10n,
      error: Object.assign(new Error('connect postgres://u:pw@h/db refused'), { code: 'ECONNREFUSED' }),
      when: new Date('2026-12-03T00:00:00Z'),
      buffer: Buffer.from('hi'),
      maxTokens: 1000,
      deep,
      circular,
      twice: [shared, shared],
      throwing,
    }) as Record<string, any>;
    expect(masked.throwing).toEqual({ ok: 1, broken: '[unreadable]' });
    expect(masked.headers).toEqual({ 'x-api-key': '[redacted]', 'proxy-authorization': '[redacted]', cookie: '[redacted]', 'content-type': 'json' });
    expect(masked.aws).toEqual({ secretAccessKey: '[redacted]', accessKeyId: 'AKIA', secretKey: '[redacted]', secretName: 'prod/db', secretArn: 'arn:aws:secretsmanager:x' });
    expect(masked.credentials).toBe('[redacted]');
    expect(masked.count).toBe('10');
    expect(masked.error).toMatchObject({ name: 'Error', message: 'connect postgres://u:[redacted]@h/db refused', code: 'ECONNREFUSED' });
    expect(masked.error.stack).toContain('postgres://u:[redacted]@h/db');
    expect(masked.when).toEqual(new Date('2026-12-03T00:00:00Z'));
    expect(masked.buffer).toEqual({ type: 'Buffer', data: [104, 105] });
    expect(masked.maxTokens).toBe(1000);
    expect(masked.circular).toEqual({ name: 'loop', self: '[circular]' });
    expect(masked.twice).toEqual([{ token: '[redacted]' }, { token: '[redacted]' }]);
    const text = JSON.stringify(masked);
    expect(text).toContain('[too deep]');
    for (let i = 1; i <= 12; i++) expect(text).not.toContain(`p${i}@`);
    expect(text).not.toMatch(/"password":"p\d+"/);
  });

  it('masks every line of a plugged-in logger, pino included, and of its children', () => {
    const written: Array<[string, string, unknown]> = [];
    const plain: Logger = {
      debug: (m, d) => void written.push(['debug', m, d]),
      info: (m, d) => void written.push(['info', m, d]),
      warn: (m, d) => void written.push(['warn', m, d]),
      error: (m, d) => void written.push(['error', m, d]),
    };
    const logger = maskedLogger(plain);
    logger.error('connect postgres://app:pw@db failed', { authorization: 'Bearer T', nested: { databaseUrl: 'postgres://a:b@c/d' } });
    logger.child!({ apiKey: 'K' }).info('calling', { url: 'https://x.org/?token=abc' });
    expect(JSON.stringify(written)).not.toMatch(/pw@|Bearer T|a:b@|"K"|token=abc/);
    expect(written[1]).toEqual(['info', 'calling', { apiKey: '[redacted]', url: 'https://x.org/?token=[redacted]' }]);
    // A logger that masks already is not wrapped again.
    const console = consoleLogger('debug', {}, { write: () => {} });
    expect(maskedLogger(console)).toBe(console);

    const pinoLines: Array<[string, object, string | undefined]> = [];
    const fakePino = (bindings: Record<string, unknown>): PinoLike => ({
      debug: (o, m) => void pinoLines.push(['debug', { ...bindings, ...o }, m]),
      info: (o, m) => void pinoLines.push(['info', { ...bindings, ...o }, m]),
      warn: (o, m) => void pinoLines.push(['warn', { ...bindings, ...o }, m]),
      error: (o, m) => void pinoLines.push(['error', { ...bindings, ...o }, m]),
      child: (more) => fakePino({ ...bindings, ...more }),
      isLevelEnabled: (level) => level !== 'debug',
    });
    const pino = pinoLogger(fakePino({}));
    pino.debug('not written', { password: 'x' });
    pino.child!({ clientSecret: 's' }).error('upstream said: Authorization: Bearer abc', { authorization: 'Bearer abc', attempt: 2 });
    expect(pinoLines).toEqual([['error', { clientSecret: '[redacted]', authorization: '[redacted]', attempt: 2 }, 'upstream said: Authorization: Bearer [redacted]']]);
    expect(maskedLogger(pino)).toBe(pino);
  });
});
