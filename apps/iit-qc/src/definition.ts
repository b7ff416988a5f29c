import { defineFanout, LocalLimit } from '@fanout/core';
import type pg from 'pg';
import { z } from 'zod';
import { evaluateSubject } from './rules/engine.ts';
import { finishRun } from './run/finish.ts';
import { startStudyChecks } from './run/study-checks.ts';
import { loadSubject, runContext, runInputIssues, runLabel, runPrepared, runSubjects, saveSubject, snapshotRun } from './run/run-store.ts';
import type { AgentReview } from './review/agent-review.ts';

export const qcInput = z.object({
  studyId: z.uuid({ error: 'must be a study id (a UUID)' }),
  ruleSetId: z.uuid({ error: 'must be a rule set id (a UUID)' }),
});

/** What a child gets: its subject and site (the rest is in the run's snapshot). */
export const qcItem = z.object({ subject: z.string().min(1), site: z.string().nullable() });

export interface QcOptions {
  pool: pg.Pool;
  /** Runs the rules of kind llm; without it they are recorded as errors ("no model configured"). */
  review?: AgentReview | null;
  /**
   * Subjects whose records this process holds at once, from their load to the end of their rule
   * evaluation; its other children wait before loading. The evaluation is CPU work on the one
   * JavaScript thread, so two (one evaluated while the next loads) keep the thread busy, and the
   * worker's memory holds two subjects' records whatever its concurrency (and, for rules of kind
   * llm, those whose review is waiting on the model). @default 2
   */
  subjectsInMemory?: number;
}

/**
 * A QC run: one task, one child per subject. The manager freezes the rule-set version and the
 * datasets' versions and hashes, starts the study-level checks beside the children (SDTM) and
 * lists the subjects; each child evaluates the record- and subject-level rules on its subject's
 * records and stores its findings (replacing those of an earlier attempt); the fan-in keeps what
 * the study-level checks found (or runs them: REDCap, or they did not finish), compares with the
 * previous run and settles the discrepancies.
 */
export function qcRun(options: QcOptions) {
  const { pool } = options;
  const inMemory = new LocalLimit(options.subjectsInMemory ?? 2);
  return defineFanout({
    name: 'iit_qc_run',
    input: qcInput,
    item: qcItem,
    result: z.object({ records: z.number().int(), findings: z.number().int(), errors: z.number().int() }),
    options: { child: { retryDelaySeconds: 2 } },
    summarize: (input, { tenant }) => runLabel(pool, tenant, input),
    // A study that is not the tenant's, or a rule set of another study, is refused at submit.
    checkInput: (input, { tenant }) => runInputIssues(pool, tenant ?? '', input),
    async *listItems(input, ctx) {
      const run = await snapshotRun(pool, ctx.task.id, ctx.task.tenant ?? '', input);
      // The study-level checks start now and run beside the children, in this process; their end
      // is not awaited: the listing's last page goes in only once the listing returns. Should they
      // fail or this process die, the fan-in runs them.
      const failed = (error: unknown) => ctx.logger.warn('study-level checks did not run beside the children; the fan-in runs them', { taskId: ctx.task.id, error: (error as Error).message });
      (await startStudyChecks(pool, ctx.task.id).catch((error: unknown) => (failed(error), null)))?.done.catch(failed);
      let subjects = 0;
      for await (const page of runSubjects(pool, run)) {
        subjects += page.length;
        yield page.map((s) => ({ key: s.subject, snapshot: s }));
      }
      await pool.query("UPDATE qc_run SET subjects = $2, stage = 'checking' WHERE task_id = $1", [ctx.task.id, subjects]);
    },
    async runItem(item, ctx) {
      const run = await runContext(pool, ctx.task.id);
      const { data, findings, tallies } = await inMemory.run(async () => {
        const data = await loadSubject(pool, run, item.subject, item.site);
        return { data, ...evaluateSubject(run.childRules, data, run.trial) };
      }, ctx.signal);
      const llmRules = run.childRules.filter((r) => r.kind === 'llm');
      if (llmRules.length > 0) {
        const reviewed = await reviewSubject(options.review ?? null, llmRules, data, ctx);
        findings.push(...reviewed.findings);
        for (const [id, tally] of reviewed.tallies) tallies.set(id, tally);
      }
      // A save that comes after its round's fan-in (this worker lost its claim and went on) stores nothing.
      if (!(await saveSubject(pool, ctx.task.id, ctx.item.round, item.subject, findings, tallies))) ctx.log(`subject ${item.subject}: the run was settled without this attempt; nothing stored`);
      return { records: data.records.length, findings: findings.length, errors: [...tallies.values()].reduce((n, t) => n + t.errors, 0) };
    },
    async onFinish(task) {
      // A run whose manager failed before it was prepared (its study's data went meanwhile) has
      // nothing to finish: its fan-in is done.
      if (!(await runPrepared(pool, task.id))) return;
      await finishRun(pool, task);
    },
  });
}

async function reviewSubject(review: AgentReview | null, rules: Parameters<AgentReview['review']>[0][], data: Parameters<AgentReview['review']>[1], ctx: Parameters<AgentReview['review']>[2]) {
  const findings: Awaited<ReturnType<AgentReview['review']>>['findings'] = [];
  const tallies = new Map<string, { errors: number; firstError: string | null }>();
  for (const rule of rules) {
    if (!review) {
      tallies.set(rule.id, { errors: 1, firstError: 'no model is configured (FANOUT_LLM_BASE_URL)' });
      continue;
    }
    const outcome = await review.review(rule, data, ctx);
    findings.push(...outcome.findings);
    if (outcome.error) tallies.set(rule.id, { errors: 1, firstError: outcome.error });
  }
  return { findings, tallies };
}

export type QcDefinition = ReturnType<typeof qcRun>;
