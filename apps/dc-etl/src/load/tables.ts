import pg from 'pg';
import { SQL_TYPE, type TargetColumn } from '../spec/compile.ts';

const { escapeIdentifier } = pg;

/** The staging table of a load: `etl_stage.l_<load id>`. */
export const stageTable = (loadId: string) => `etl_stage.${escapeIdentifier(`l_${loadId.replaceAll('-', '')}`)}`;

/** A published table's physical name (the registry maps a tenant's target name to it). */
export const publishedTable = (tableName: string) => `etl_pub.${escapeIdentifier(tableName)}`;

export const quoted = (name: string) => escapeIdentifier(name);

const columnsDdl = (columns: readonly TargetColumn[]) => columns.map((c) => `${escapeIdentifier(c.name)} ${SQL_TYPE[c.type]}`).join(', ');

/**
 * The staging table: each clean row with its chunk and source line, and whether the fan-in
 * marked it a duplicate. Unlogged (staging is rebuilt from the file, never the record); the
 * fan-in checks its row count against the chunks' before anything is published.
 */
export function createStageSql(loadId: string, columns: readonly TargetColumn[]): string {
  return `CREATE UNLOGGED TABLE IF NOT EXISTS ${stageTable(loadId)} (_chunk integer NOT NULL, _line integer NOT NULL, _dup boolean NOT NULL DEFAULT false, ${columnsDdl(columns)})`;
}

export function createPublishedSql(tableName: string, columns: readonly TargetColumn[]): string {
  return `CREATE TABLE ${publishedTable(tableName)} (_load_id uuid NOT NULL, _line integer NOT NULL, ${columnsDdl(columns)})`;
}
