/**
 * The part of a Prisma 7 client the store uses. Any client generated from a schema that
 * contains the Fanout models fits it; the store only sends parameterised SQL through it.
 */
export interface PrismaQueryable {
  $queryRaw<T = unknown>(query: TemplateStringsArray, ...values: any[]): PromiseLike<T>;
  $queryRawUnsafe<T = unknown>(query: string, ...values: any[]): PromiseLike<T>;
  /**
   * Not Prisma's: the store's own path over a `pg` pool adds it, to send a text that recurs (one
   * of pg-boss's statements) as a prepared statement. Without it, `$queryRawUnsafe`.
   */
  $queryRawPrepared?<T = unknown>(query: string, ...values: any[]): PromiseLike<T>;
}

export interface PrismaClientLike extends PrismaQueryable {
  $transaction<R>(fn: (tx: any) => Promise<R>, options?: { maxWait?: number; timeout?: number }): Promise<R>;
}

/** A named prepared statement, as `pg` takes it. */
export interface PgQueryConfig {
  name: string;
  text: string;
  values: unknown[];
}

/** The part of a `pg` pool client the store uses. */
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  query(config: PgQueryConfig): Promise<{ rows: any[] }>;
  release(error?: Error): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
}

/** The part of a `pg` Pool the store uses (`PrismaFanoutStoreOptions.pool`). */
export interface PgPoolLike {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  query(config: PgQueryConfig): Promise<{ rows: any[] }>;
  connect(): Promise<PgClientLike>;
}
