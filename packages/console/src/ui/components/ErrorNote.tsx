/** A failed load, with what went wrong and a way to try again. */
export function ErrorNote({ message, retry }: { message: string; retry?: () => void }) {
  return (
    <div class="error-note" role="alert">
      <span>{message}</span>
      {retry ? (
        <button type="button" onClick={retry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}
