import { useEffect, useState } from 'preact/hooks';
import { useDebounced } from '../../hooks.ts';
import { searchQuery } from '../../state/tabs.ts';

/** Search by task id (its start, 4 hex characters or more), applied as you type. */
export function SearchBox({ q, onSearch }: { q: string; onSearch(q: string): void }) {
  const [value, setValue] = useState(q);
  const typing = useDebounced(300);
  useEffect(() => setValue(q), [q]);
  const invalid = value.trim() !== '' && searchQuery(value) === null;
  const apply = (next: string) =>
    typing.later(() => {
      const s = next.trim();
      if (s === '' || searchQuery(s) !== null) onSearch(s);
    });
  return (
    <form class="search" role="search" onSubmit={(e) => e.preventDefault()}>
      <label for="task-search">Find a task by id</label>
      <input
        id="task-search"
        type="search"
        inputMode="text"
        autocomplete="off"
        spellcheck={false}
        placeholder="0193ab…"
        value={value}
        aria-invalid={invalid ? true : undefined}
        aria-describedby="task-search-hint"
        onInput={(e) => {
          setValue(e.currentTarget.value);
          apply(e.currentTarget.value);
        }}
      />
      <span id="task-search-hint" class={invalid ? 'hint hint-warn' : 'hint'}>
        {invalid ? 'Type at least 4 hex characters of an id.' : 'The start of an id, 4 characters or more.'}
      </span>
    </form>
  );
}
