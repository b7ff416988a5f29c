import { useEffect, useRef, useState } from 'preact/hooks';
import { sourceDependencies } from '../../../config.ts';
import { ApiError, describeError } from '../../api/errors.ts';
import type { TaskView } from '../../api/types.ts';
import { useApp } from '../../app-context.ts';
import { shortId } from '../../state/format.ts';
import { newIdempotencyKey } from '../../state/idempotency.ts';
import { placeIssues } from '../../state/issues.ts';
import { buildBody, EMPTY_OPTIONS, initialValues, sourcePath, validateValues, type FieldValue, type OptionValues } from '../../state/new-task.ts';
import { FileField } from './FileField.tsx';
import { InputField } from './InputField.tsx';
import { MultiSelectField } from './MultiSelectField.tsx';
import { OptionsFields } from './OptionsFields.tsx';
import { SelectField } from './SelectField.tsx';

/**
 * The app's "new task" panel, built from its config. One click is one task: the button is
 * disabled while the request runs and every submission carries a fresh Idempotency-Key (the
 * server answers the same task for the same key). A 400's issues land next to their fields.
 */
export function NewTaskPanel({ onCreated }: { onCreated(task: TaskView): void }) {
  const { config, api, store, toast } = useApp();
  const panel = config.newTask;
  const [values, setValues] = useState<Record<string, FieldValue>>(() => initialValues(panel.fields));
  const [options, setOptions] = useState<OptionValues>(EMPTY_OPTIONS);
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [general, setGeneral] = useState<string[]>([]);
  const [submitting, setSubmitting] = useState(false);
  const [uploads, setUploads] = useState(0);
  // Remounting the fields clears what the DOM holds itself (a chosen file).
  const [generation, setGeneration] = useState(0);
  const inFlight = useRef(false);
  // The submit button is disabled while its request runs, which drops the keyboard's focus to the
  // page: it gets it back once the request ended (unless the focus went elsewhere meanwhile).
  const button = useRef<HTMLButtonElement>(null);
  const refocus = useRef(false);
  useEffect(() => {
    if (submitting || !refocus.current) return;
    refocus.current = false;
    const at = document.activeElement;
    if (at === null || at === document.body) button.current?.focus();
  }, [submitting]);

  const set = (name: string, value: FieldValue) => {
    setValues((v) => ({ ...v, [name]: value }));
    if (errors[name]) setErrors(({ [name]: _, ...rest }) => rest);
  };

  const submit = async () => {
    // The ref stops a second click that arrives before the disabled button is rendered.
    if (inFlight.current || uploads > 0) return;
    const opts = panel.options ? options : null;
    const found = validateValues(panel.fields, values, opts);
    setErrors(found);
    setGeneral([]);
    if (Object.keys(found).length > 0) return;
    inFlight.current = true;
    refocus.current = true;
    setSubmitting(true);
    try {
      const answer = await api.send<{ id: string; status: string }>('POST', '/tasks', buildBody(panel.fields, values, opts), { 'idempotency-key': newIdempotencyKey() });
      setValues(initialValues(panel.fields));
      setOptions(EMPTY_OPTIONS);
      setGeneration((g) => g + 1);
      toast({ text: `Started task ${shortId(answer.id)}.` });
      try {
        onCreated(store.upsert(await api.get<TaskView>(`/tasks/${encodeURIComponent(answer.id)}`)));
      } catch {
        // The task exists; the live stream brings it into the list.
      }
    } catch (error) {
      if (error instanceof ApiError && error.issues.length > 0) {
        const placed = placeIssues(error.issues, panel.fields.map((f) => f.name));
        setErrors(placed.byField);
        setGeneral(placed.general.length > 0 ? placed.general : Object.keys(placed.byField).length > 0 ? [] : [error.message]);
      } else {
        setGeneral([describeError(error)]);
        toast({ kind: 'error', text: `The task was not started: ${describeError(error)}` });
      }
    } finally {
      inFlight.current = false;
      setSubmitting(false);
    }
  };

  return (
    <section class="panel new-task" aria-labelledby="new-task-heading">
      <h2 id="new-task-heading">{panel.title}</h2>
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <div key={generation}>
          {panel.fields.map((f) => {
            const v = values[f.name];
            switch (f.kind) {
              case 'multiselect':
                return <MultiSelectField key={f.name} spec={f} value={Array.isArray(v) ? v : []} errors={errors[f.name]} onChange={(x) => set(f.name, x)} />;
              case 'select': {
                const waitingFor = sourceDependencies(f.source.path).find((name) => !values[name]);
                const label = panel.fields.find((x) => x.name === waitingFor)?.label ?? null;
                return <SelectField key={f.name} spec={f} value={typeof v === 'string' ? v : ''} path={sourcePath(f.source.path, values)} waitingFor={label} errors={errors[f.name]} onChange={(x) => set(f.name, x)} />;
              }
              case 'file':
                return <FileField key={f.name} spec={f} errors={errors[f.name]} onChange={(x) => set(f.name, x)} onBusy={(busy) => setUploads((n) => Math.max(0, n + (busy ? 1 : -1)))} />;
              default:
                return <InputField key={f.name} spec={f} value={typeof v === 'string' ? v : ''} errors={errors[f.name]} onChange={(x) => set(f.name, x)} />;
            }
          })}
          {panel.options ? <OptionsFields values={options} errors={errors} onChange={setOptions} /> : null}
        </div>
        {general.length > 0 ? (
          <div class="form-error" role="alert">
            {general.map((g) => (
              <p key={g}>{g}</p>
            ))}
          </div>
        ) : null}
        <button type="submit" class="primary" ref={button} disabled={submitting || uploads > 0}>
          {submitting ? 'Starting…' : panel.submitLabel}
        </button>
      </form>
    </section>
  );
}
