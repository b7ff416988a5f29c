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

  it('reads tenant weights as weights of their own, whatever the tenant is named', () => {
    const env = loadEnv({}, { DATABASE_URL: 'postgres://u:p@db/x', FANOUT_TENANT_WEIGHTS: 'team-a=2, __proto__=3,constructor=0.5' });
    const weights = env.FANOUT_TENANT_WEIGHTS!;
    expect(Object.keys(weights)).toEqual(['team-a', '__proto__', 'constructor']);
    expect(Object.getPrototypeOf(weights)).toBe(Object.prototype);
    expect([weights['team-a'], Object.getOwnPropertyDescriptor(weights, '__proto__')?.value, weights.constructor]).toEqual([2, 3, 0.5]);
    expect(() => loadEnv({}, { DATABASE_URL: 'postgres://u:p@db/x', FANOUT_TENANT_WEIGHTS: 'team-a=0' })).toThrow(/FANOUT_TENANT_WEIGHTS: must be tenant=weight pairs/);
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
    const table = parseTokens('secret-team-a-0001:team-a, secret-operator-01:ops:operator');
    const authenticate = tokenAuthenticator(table);
    expect(authenticate('secret-team-a-0001')).toEqual({ tenant: 'team-a', role: 'user' });
    expect(authenticate('secret-operator-01')).toEqual({ tenant: 'ops', role: 'operator' });
    expect(authenticate('secret-team-b-0001')).toBeNull();
    expect(() => parseTokens('secret-team-a-0001:team-a,secret-team-a-0001:team-b')).toThrow('entry 2: the token is listed twice');
    expect(() => parseTokens('secret-team-a-0001:team-a:admin')).toThrow('entry 1: the role must be user or operator');
    expect(() => parseTokens('secret-team-a-0001')).toThrow('entry 1 must be token:tenant or token:tenant:role');
    try {
      loadEnv({}, { FANOUT_TOKENS: 'hunter22-hunter22:a b' });
    } catch (error) {
      expect((error as Error).message).toContain("FANOUT_TOKENS: entry 1: the tenant must be 1-100 letters");
      expect((error as Error).message).not.toContain('hunter22');
    }
  });

  it('refuses weak tokens: short (a single character too), one character repeated, with spaces', () => {
    expect(() => parseTokens('x:team')).toThrow('entry 1: the token must be at least 16 characters');
    expect(() => parseTokens('token-a:team-a')).toThrow('entry 1: the token must be at least 16 characters');
    expect(() => parseTokens('secret-team-a-0001:team-a,aaaaaaaaaaaaaaaaaaaa:team-b')).toThrow('entry 2: the token must not be one character repeated');
    expect(() => parseTokens('secret team a 0001:team-a')).toThrow('entry 1: the token must not contain spaces');
    const error = (() => {
      try {
        loadEnv({}, { FANOUT_TOKENS: 'x:team' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.message).toContain('FANOUT_TOKENS: entry 1: the token must be at least 16 characters');
  });

  it('never shifts a token holding a colon into another tenant: it is written with its role, or refused', () => {
    const authenticate = tokenAuthenticator(parseTokens('key-0001:secret-part:team-a:user,key-0002:secret-part:ops:operator'));
    expect(authenticate('key-0001:secret-part')).toEqual({ tenant: 'team-a', role: 'user' });
    expect(authenticate('key-0002:secret-part')).toEqual({ tenant: 'ops', role: 'operator' });
    expect(authenticate('key-0001')).toBeNull();
    // Read left to right, this was token "key-0001", tenant "secret-part", role "operator".
    expect(() => parseTokens('key-0001:secret-part:operator')).toThrow('entry 1: the token must be at least 16 characters');
    // Without its role, a token with a colon is not guessed at.
    expect(() => parseTokens('key-0001:secret-part:team-a')).toThrow('entry 1: the role must be user or operator');
    expect(() => parseTokens('secret-team-a-0001:operator')).toThrow('entry 1: the tenant must not be named operator');
  });

  it('compares tokens in constant time: a guess sharing a long prefix with a token is refused like any other', () => {
    const token = 'c0nstant-time-token-0123456789';
    const authenticate = tokenAuthenticator(parseTokens(`${token}:team-a`));
    expect(authenticate(token)).toEqual({ tenant: 'team-a', role: 'user' });
    expect(authenticate(`${token.slice(0, -1)}X`)).toBeNull();
    expect(authenticate(`${token}0`)).toBeNull();
    expect(authenticate('')).toBeNull();
  });
});
