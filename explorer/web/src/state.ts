// The view's state in the URL (?node=&up=&down=&sel=&x=&view=&max=), shared
// by the app (app.ts) and the boot script (boot.ts), which starts reading
// the centre's lineage while the app's bundle is still loading.
import { lineageQuery, setTime } from './api';
import type { Lineage } from './api';

export const MAX_DEPTH = 20;

export interface ViewState {
  node: string | null;
  up: number;
  down: number;
  sel: string | null;
  x: string[]; // expanded nodes
  ds: boolean; // dataset-only (DERIVES) view
  max: number; // maxNodes per query, 0: the server's default
  asOf: string | null; // YYYY-MM-DD: the lineage as of that date (end of day UTC)
  stale: boolean; // show stale edges
  ns: string | null; // landing: the namespace browsed
  page: number; // landing: the page of the namespace browsed
  sort: string; // landing: name, -name or type
}

export function clampDepth(v: unknown, def: number): number {
  const n = Number(v);
  if (!Number.isInteger(n)) return def;
  return Math.max(0, Math.min(MAX_DEPTH, n));
}

export function readURL(): ViewState {
  const q = new URLSearchParams(location.search);
  return {
    node: q.get('node'),
    up: clampDepth(q.get('up') ?? 1, 1),
    down: clampDepth(q.get('down') ?? 1, 1),
    sel: q.get('sel'),
    x: q.getAll('x'),
    ds: q.get('view') === 'datasets',
    max: Math.max(0, Math.min(5000, Number(q.get('max')) || 0)),
    asOf: /^\d{4}-\d{2}-\d{2}$/.test(q.get('asOf') || '') ? q.get('asOf') : null,
    stale: q.get('stale') === 'show',
    ns: q.get('ns'),
    page: Math.max(0, Math.floor(Number(q.get('page')) || 0)),
    sort: ['name', '-name', 'type'].includes(q.get('sort') || '') ? (q.get('sort') as string) : 'name',
  };
}

export function urlOf(s: ViewState): string {
  const q = new URLSearchParams();
  if (s.node) {
    q.set('node', s.node);
    q.set('up', String(s.up));
    q.set('down', String(s.down));
  }
  if (s.sel) q.set('sel', s.sel);
  for (const x of s.x) q.append('x', x);
  if (s.ds) q.set('view', 'datasets');
  if (s.max) q.set('max', String(s.max));
  if (s.asOf) q.set('asOf', s.asOf);
  if (s.stale) q.set('stale', 'show');
  if (!s.node && s.ns) {
    q.set('ns', s.ns);
    if (s.page) q.set('page', String(s.page));
    if (s.sort !== 'name') q.set('sort', s.sort);
  }
  const qs = q.toString();
  return location.pathname + (qs ? '?' + qs : '');
}

/** The depths the centre is queried with: a dataset-only step is two hops. */
export function centreDepths(s: ViewState): [number, number] {
  const k = s.ds ? 2 : 1;
  return [s.up * k, s.down * k];
}

interface Early {
  query: string;
  answer: Promise<Lineage | null>;
}

const EARLY_KEY = '__lfEarly';

/**
 * Starts reading the centre's lineage at once (boot.ts), at high fetch
 * priority: an event stream opened from the page's head is a delayable
 * request that Chromium sends only once the document is parsed, after the
 * bundle ran.
 */
export function fetchEarly(): void {
  const s = readURL();
  if (!s.node || typeof fetch === 'undefined') return;
  setTime(s.asOf, s.stale);
  const [up, down] = centreDepths(s);
  const query = lineageQuery(s.node, up, down, s.max);
  const answer = fetch('/api/lf/v1/lineage?' + query, { headers: { Accept: 'application/json' }, priority: 'high' }).then(
    (r) => (r.ok ? (r.json() as Promise<Lineage>) : null),
    () => null,
  ).catch(() => null);
  (window as unknown as Record<string, Early>)[EARLY_KEY] = { query, answer };
}

/**
 * The answer the boot script started reading for this lineage query, once;
 * null when there is none or it was for another query. It resolves to null
 * when the read failed (the caller's own stream reports why).
 */
export function takeEarly(nodeId: string, up: number, down: number, max: number): Promise<Lineage | null> | null {
  const w = window as unknown as Record<string, Early | undefined>;
  const e = w[EARLY_KEY];
  if (!e) return null;
  w[EARLY_KEY] = undefined;
  return e.query === lineageQuery(nodeId, up, down, max) ? e.answer : null;
}
