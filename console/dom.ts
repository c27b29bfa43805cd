// Building the page from data: every value reaches it as text (textContent, append(string),
// attribute values), never as markup; and the forms' times as the API wants them.

export function byId<T extends HTMLElement>(id: string, type: new () => T): T {
  const el = document.getElementById(id);
  if (!(el instanceof type)) throw new Error(`the page lacks #${id}`);
  return el;
}

export type Child = Node | string | null | undefined;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  for (const c of children) if (c !== null && c !== undefined) el.append(c);
  return el;
}

export function when(value: string | null): string {
  return value ? value.replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '—';
}

/** A datetime-local field's value (the browser's local time) as an RFC 3339 instant. */
export function instant(local: string): string | undefined {
  return local ? new Date(local).toISOString() : undefined;
}

export function localValue(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * How a list names a delivery: the id's last characters. A UUIDv7 begins with its creation time,
 * so deliveries made within a minute of each other share their first ones; the end is random.
 * The full id is the title, and the delivery panel shows it.
 */
export function shortId(id: string): string {
  return `…${id.slice(-8)}`;
}

/** A merchant by name, as support staff know it, with its id on hover. */
export function merchantName(name: string, id: string): HTMLSpanElement {
  return h('span', { title: id }, name);
}

export function facts(list: HTMLDListElement, rows: [string, Child][]): void {
  list.replaceChildren(...rows.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value ?? '—')]));
}

export function option(value: string, text: string): HTMLOptionElement {
  const o = h('option', { value });
  o.textContent = text;
  return o;
}
