import { describe, expect, it } from 'vitest';
import { ConfigError, intVar, loadEnv, parseTokens, stringVar, tokenAuthenticator } from '../src/index.ts';

describe('configuration from the environment', () => {
  it('reads the common variables with their defaults, and the app’s own', () => {
    const env = loadEnv({ APP_DIR: stringVar().default('/srv/files'), APP_LIMIT: intVar({ min: 1, max: 10 }).default(3) }, { DATABASE_URL: 'postgres://u:p@db/x', APP_LIMIT: '7' });
    expect(env).toMatchObject({ DATABASE_URL: 'postgres://u:p@db/x', HOST: '127.0.0.1', FANOUT_POOL_SIZE: 10, FANOUT_WORKER_CONCURRENCY: 10, FANOUT_LOG_LEVEL: 'warn', APP_DIR: '/srv/files', APP_LIMIT: 7 });
    expect(env.PORT).toBeUndefined();
    // An empty variable is unset, as shells and .env files mean it.
    expect(loadEnv({}, { FANOUT_POOL_SIZE: '' }).FANOUT_POOL_SIZE).toBe(10);
  });

  it('names every variable that is wrong and the rule it breaks, in one error', () => {
    const attempt = () =>
      loadEnv({ APP_LIMIT: intVar({ min: 1, max: 10 }) }, { DATABASE_URL: 'mysql://nope', FANOUT_WORKER_CONCURRENCY: 'ten', APP_LIMIT: '11', FANOUT_LOG_LEVEL: 'loud' });
    expect(attempt).toThrow(ConfigError);
    try {
      attempt();
    } catch (error) {
      const e = error as ConfigError;
      expect(e.issues.map((i) => i.variable).sort()).toEqual(['APP_LIMIT', 'DATABASE_URL', 'FANOUT_LOG_LEVEL', 'FANOUT_WORKER_CONCURRENCY']);
      expect(e.message).toContain('FANOUT_WORKER_CONCURRENCY: must be an integer from 1 to 10000 (got "ten")');
      expect(e.message).toContain('APP_LIMIT: must be an integer from 1 to 10 (got "11")');
      expect(e.message).toContain('DATABASE_URL: must be a postgres:// or postgresql:// connection URL');
      expect(e.message).not.toContain('\n');
    }
  });

  it('parses tokens with tenants and roles, and refuses bad entries without echoing the token', () => {
    const table = parseTokens('secret-a:team-a, secret-op:ops:operator');
    const authenticate = tokenAuthenticator(table);
    expect(authenticate('secret-a')).toEqual({ tenant: 'team-a', role: 'user' });
    expect(authenticate('secret-op')).toEqual({ tenant: 'ops', role: 'operator' });
    expect(authenticate('secret-b')).toBeNull();
    expect(() => parseTokens('short:team')).toThrow('entry 1: the token must be at least 6 characters');
    expect(() => parseTokens('secret-a:team-a,secret-a:team-b')).toThrow('entry 2: the token is listed twice');
    expect(() => parseTokens('secret-a:team-a:admin')).toThrow('entry 1: the role must be user or operator');
    expect(() => parseTokens('secret-a')).toThrow('entry 1 must be token:tenant or token:tenant:role');
    try {
      loadEnv({}, { FANOUT_TOKENS: 'hunter22:a b' });
    } catch (error) {
      expect((error as Error).message).toContain("FANOUT_TOKENS: entry 1: the tenant must be 1-100 letters");
      expect((error as Error).message).not.toContain('hunter22');
    }
  });
});
