// Small DOM and text helpers shared by the panels.

/** Runs f when the page is idle (input and frames first), within 500 ms. */
export function later(f: () => void): void {
  if (typeof requestIdleCallback === 'function') requestIdleCallback(() => f(), { timeout: 500 });
  else window.setTimeout(f, 0);
}

export function $(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (!e) throw new Error('missing #' + id);
  return e;
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: (Node | string | null)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null) e.append(k);
  return e;
}

export function fmtTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !isFinite(ms) || ms <= 0) return '—';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return ms + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
  return Math.round(ms / 60000) + ' min';
}

export function shorten(s: string, n: number): string {
  if (s.length <= n) return s;
  const h = Math.floor((n - 1) / 2);
  return s.slice(0, h) + '…' + s.slice(s.length - (n - 1 - h));
}

export function kindName(t: string): string {
  return t === 'JOB' ? 'Job' : 'Dataset';
}

/** s with the characters that are special in HTML text and attribute values escaped. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

/** The elements of the given HTML snippets (one element each, escaped with esc), parsed at once. */
export function parseItems(html: string[]): HTMLElement[] {
  if (!html.length) return [];
  const t = document.createElement('template');
  t.innerHTML = html.join('');
  return Array.from(t.content.children) as HTMLElement[];
}
