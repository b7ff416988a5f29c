/** A field's messages, referenced by the field's aria-describedby. */
export function FieldErrors({ id, errors }: { id: string; errors: string[] | undefined }) {
  if (!errors || errors.length === 0) return null;
  return (
    <ul id={id} class="field-errors">
      {errors.map((e) => (
        <li key={e}>{e}</li>
      ))}
    </ul>
  );
}

/** The aria attributes of a field with these messages. */
export const invalidProps = (id: string, errors: string[] | undefined, hint?: string) => {
  const describedBy = [errors?.length ? id : null, hint ?? null].filter(Boolean).join(' ');
  return { 'aria-invalid': errors?.length ? true : undefined, 'aria-describedby': describedBy || undefined };
};
