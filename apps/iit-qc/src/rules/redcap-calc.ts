// Translates a REDCap calculation (the "Choices, Calculations" of a calc field) into CEL, so rule H
// can recompute it. Only arithmetic REDCap shares with CEL is translated: numbers, [field]
// references, + - * / ^, parentheses, round(), abs() and sqrt(). Anything else (if(), datediff(),
// roundup(), sum() and the other functions, [event][field], smart variables) is refused with the reason.

type Token = { kind: 'num' | 'field' | 'op' | 'name' | '(' | ')' | ','; text: string };

function tokens(source: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const num = /^(\d+\.?\d*|\.\d+)/.exec(source.slice(i));
    if (num) {
      out.push({ kind: 'num', text: num[0] });
      i += num[0].length;
      continue;
    }
    if (c === '[') {
      const end = source.indexOf(']', i);
      const name = source.slice(i + 1, end);
      if (end < 0 || !/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`unsupported reference ${source.slice(i, end + 1 || undefined)}`);
      if (source[end + 1] === '[') throw new Error('event-qualified references are not translated');
      out.push({ kind: 'field', text: name });
      i = end + 1;
      continue;
    }
    const name = /^[a-z_]+/i.exec(source.slice(i));
    if (name) {
      out.push({ kind: 'name', text: name[0].toLowerCase() });
      i += name[0].length;
      continue;
    }
    if ('+-*/^'.includes(c)) out.push({ kind: 'op', text: c });
    else if (c === '(' || c === ')' || c === ',') out.push({ kind: c, text: c });
    else throw new Error(`unsupported character "${c}"`);
    i++;
  }
  return out;
}

const FUNCTIONS: Record<string, (args: string[]) => string> = {
  round: (a) => `round(${a[0]}, ${a[1] ?? '0'})`,
  roundup: (a) => `(ceilTo(${a[0]}, ${a[1] ?? '0'}))`,
  rounddown: (a) => `(floorTo(${a[0]}, ${a[1] ?? '0'}))`,
  abs: (a) => `abs(${a[0]})`,
  sqrt: (a) => `sqrt(${a[0]})`,
};

/** The CEL of a REDCap calculation, and the fields it reads. */
export function translateCalculation(source: string): { cel: string; fields: string[] } {
  const toks = tokens(source);
  const fields = new Set<string>();
  let pos = 0;
  const peek = () => toks[pos];
  const take = (kind?: Token['kind']) => {
    const t = toks[pos++];
    if (!t || (kind && t.kind !== kind)) throw new Error(`unexpected ${t ? `"${t.text}"` : 'end'}${kind ? `, expected ${kind}` : ''}`);
    return t;
  };
  // Precedence climbing: + - < * / < ^ (right associative) < unary.
  const expr = (): string => {
    let left = term();
    while (peek()?.kind === 'op' && (peek()!.text === '+' || peek()!.text === '-')) left = `(${left} ${take().text} ${term()})`;
    return left;
  };
  const term = (): string => {
    let left = power();
    while (peek()?.kind === 'op' && (peek()!.text === '*' || peek()!.text === '/')) left = `(${left} ${take().text} ${power()})`;
    return left;
  };
  const power = (): string => {
    const base = unary();
    if (peek()?.kind === 'op' && peek()!.text === '^') {
      take();
      return `pow(${base}, ${power()})`;
    }
    return base;
  };
  const unary = (): string => {
    if (peek()?.kind === 'op' && peek()!.text === '-') {
      take();
      return `(-${unary()})`;
    }
    return atom();
  };
  const atom = (): string => {
    const t = take();
    if (t.kind === 'num') return t.text.includes('.') ? t.text : `${t.text}.0`;
    if (t.kind === 'field') {
      fields.add(t.text);
      return `num(row.${t.text})`;
    }
    if (t.kind === '(') {
      const inner = expr();
      take(')');
      return `(${inner})`;
    }
    if (t.kind === 'name') {
      const fn = FUNCTIONS[t.text];
      if (!fn) throw new Error(`the function ${t.text}() is not translated`);
      take('(');
      const args = [expr()];
      while (peek()?.kind === ',') {
        take();
        args.push(expr());
      }
      take(')');
      return fn(args);
    }
    throw new Error(`unexpected "${t.text}"`);
  };
  const cel = expr();
  if (pos !== toks.length) throw new Error(`unexpected "${toks[pos]!.text}"`);
  if (/ceilTo|floorTo/.test(cel)) throw new Error('roundup() and rounddown() are not translated');
  return { cel, fields: [...fields] };
}
