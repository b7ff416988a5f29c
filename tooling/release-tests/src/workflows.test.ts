import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { binOf, run } from './run.ts';
import { ROOT } from './workspace.ts';

// The GitHub workflows: valid for GitHub (action-validator, from the npm registry), and what a
// release needs from them: actions pinned to a commit, least-privilege permissions, no secret in
// a run that a pull request can start, CI running exactly `.ci/run`, publishing with provenance.

const DIR = path.join(ROOT, '.github', 'workflows');
const files = fs.readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f)).sort();

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  permissions?: Record<string, string> | string;
  steps?: Step[];
  if?: string;
  environment?: string;
  'timeout-minutes'?: number;
}
interface Workflow {
  on: Record<string, unknown> | string | string[];
  permissions?: Record<string, string> | string;
  jobs: Record<string, Job>;
}

const workflow = (file: string) => parse(fs.readFileSync(path.join(DIR, file), 'utf8')) as Workflow;
const triggers = (w: Workflow) => (typeof w.on === 'string' ? [w.on] : Array.isArray(w.on) ? w.on : Object.keys(w.on));
const writes = (permissions: Job['permissions']) =>
  typeof permissions === 'string' ? (permissions === 'read-all' ? [] : [permissions]) : Object.entries(permissions ?? {}).filter(([, v]) => v === 'write').map(([k]) => k);

describe('the GitHub workflows', () => {
  it('are CI and release', () => {
    expect(files).toEqual(['ci.yml', 'release.yml']);
  });

  it.each(files)('%s passes action-validator', async (file) => {
    const result = await run(process.execPath, [binOf('@action-validator/cli', 'action-validator'), path.join(DIR, file)], { cwd: ROOT, allowFailure: true });
    expect(`${result.stdout}${result.stderr}`).toBe('');
    expect(result.code).toBe(0);
  });

  it.each(files)('%s pins every action to a full commit, with the version it is in a comment', (file) => {
    const text = fs.readFileSync(path.join(DIR, file), 'utf8');
    const uses = [...text.matchAll(/^\s*(?:- )?uses:\s*(\S+)(.*)$/gm)];
    expect(uses.length).toBeGreaterThan(0);
    for (const [line, ref, comment] of uses) {
      if (ref!.startsWith('./')) continue;
      expect(ref, line).toMatch(/^[\w.-]+\/[\w./-]+@[0-9a-f]{40}$/);
      expect(comment, line).toMatch(/# v\d+\.\d+\.\d+/);
    }
  });

  it.each(files)('%s grants least privilege: read-only by default, writes only where a job needs them', (file) => {
    const w = workflow(file);
    expect(w.permissions, 'workflow-level permissions are set').toBeDefined();
    expect(writes(w.permissions), 'nothing written at the workflow level').toEqual([]);
    for (const [name, job] of Object.entries(w.jobs)) {
      expect(job.permissions, `${name}: a write-all token`).not.toBe('write-all');
      const granted = writes(job.permissions).sort();
      const allowed: Record<string, string[]> = { 'release.yml:version': ['contents', 'pull-requests'], 'release.yml:publish': ['contents', 'id-token'] };
      expect(granted, `${file} ${name}`).toEqual(allowed[`${file}:${name}`] ?? []);
      expect(job['timeout-minutes'], `${name} has a timeout`).toBeGreaterThan(0);
      for (const step of job.steps ?? []) {
        if (step.uses?.startsWith('actions/checkout@')) expect(step.with?.['persist-credentials'], `${name}: checkout keeps no token in .git`).toBe(false);
      }
    }
  });

  it.each(files)('%s uses no secret where a pull request can start it, and nothing runs on pull_request_target', (file) => {
    const w = workflow(file);
    expect(triggers(w)).not.toContain('pull_request_target');
    expect(triggers(w)).not.toContain('workflow_run');
    const text = fs.readFileSync(path.join(DIR, file), 'utf8');
    if (triggers(w).includes('pull_request')) expect(text).not.toMatch(/secrets\./);
  });

  it('CI runs .ci/run on pushes to main and on pull requests', () => {
    const ci = workflow('ci.yml');
    expect(triggers(ci).sort()).toEqual(['pull_request', 'push']);
    expect(Object.values(ci.jobs).flatMap((job) => job.steps ?? []).map((step) => step.run)).toContain('bash .ci/run');
  });

  it('release versions through a pull request and publishes with provenance from main only, the token in the publish job alone', () => {
    const release = workflow('release.yml');
    expect(release.on).toEqual({ push: { branches: ['main'] } });
    const { mode, version, publish } = release.jobs;
    expect(mode?.steps?.map((s) => s.uses?.split('@')[0])).toContain('changesets/action/select-mode');
    expect(version?.if).toBe("needs.mode.outputs.mode == 'version'");
    expect(version?.steps?.find((s) => s.uses?.startsWith('changesets/action/version@'))?.with?.script).toBe('pnpm changeset version');
    expect(publish?.if).toBe("needs.mode.outputs.mode == 'publish'");
    expect(publish?.environment).toBe('npm');
    const publishStep = publish?.steps?.find((s) => s.uses?.startsWith('changesets/action/publish@'));
    expect(publishStep?.with?.script).toBe('pnpm changeset publish');
    expect(publishStep?.env?.NPM_CONFIG_PROVENANCE).toBe('true');
    const usesToken = (job: Job | undefined) => JSON.stringify(job ?? {}).includes('secrets.NPM_TOKEN');
    expect([usesToken(mode), usesToken(version), usesToken(publish)]).toEqual([false, false, true]);
  });
});
