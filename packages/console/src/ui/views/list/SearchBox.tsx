import { useEffect, useRef, useState } from 'preact/hooks';
import { searchQuery } from '../../state/tabs.ts';

/** Search by task id (its start, 4 hex characters or more), applied as you type. */
export function SearchBox({ q, onSearch }: { q: string; onSearch(q: string): void }) {
  const [value, setValue] = useState(q);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => setValue(q), [q]);
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  const invalid = value.trim() !== '' && searchQuery(value) === null;
  const apply = (next: string) => {
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      const s = next.trim();
      if (s === '' || searchQuery(s) !== null) onSearch(s);
    }, 300);
  };
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
