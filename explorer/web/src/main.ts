// The lineageflow explorer UI: a focused, live lineage view around one node.
//
// State lives in the URL (?node=&up=&down=&sel=&x=&view=), so every view is a
// deep link. The view is the union of "sources": the centre node with the
// chosen depths, plus one source (depth 1 up and down) per node the user
// expanded. Each source is watched over SSE (/api/lf/v1/watch); when SSE is
// not available it falls back to /api/lf/v1/lineage. New nodes of a live
// update are placed next to their neighbours; nodes already drawn never move,
// and the user's zoom, pan and selection are kept.
import cytoscape from 'cytoscape';
import dagre from 'cytoscape-dagre';
import { ApiError, fetchColumnLineage, fetchLineage, fetchNode, lineageQuery, search } from './api';
import type { LEdge, LNode, Lineage, NodeDetails, SearchResult } from './api';
import { MAX_DEPTH, centreDepths, clampDepth, readURL, takeEarly, urlOf } from './state';
import type { ViewState } from './state';

cytoscape.use(dagre);

// When the bundle ran (performance.now()): the start of the app's timeline
// in __lf.timings (evalAt, appAt, cyAt, earlyAt, sseAt, renderStart, drawnAt).
const EVAL_AT = performance.now();
const marks: Record<string, number> = { evalAt: EVAL_AT };
function mark(name: string): void {
  if (!(name in marks)) marks[name] = performance.now();
}

const MAX_SSE = 4; // browsers allow 6 HTTP/1.1 connections per host
const RETRY_MS = 2000;
// Above this many nodes the layered (dagre) layout takes seconds: the rank layout is used.
const DAGRE_MAX_NODES = 250;
// Lists (visible nodes, edges) longer than LIST_SYNC_MAX rows get their first
// LIST_FIRST rows at once and the rest LIST_CHUNK rows per task (fillList).
const LIST_SYNC_MAX = 300;
const LIST_FIRST = 100;
const LIST_CHUNK = 200;
// A dataset's details list at most this many producing jobs.
const MAX_PRODUCERS = 10;
// Node labels: font size, and the smallest rendered size drawn (min-zoomed-font-size).
const LABEL_FONT = 13;
const LABEL_MIN_PX = 5;


// ---------------------------------------------------------------- helpers

/** Runs f when the page is idle (input and frames first), within 500 ms. */
function later(f: () => void): void {
  if (typeof requestIdleCallback === 'function') requestIdleCallback(() => f(), { timeout: 500 });
  else window.setTimeout(f, 0);
}

function $(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (!e) throw new Error('missing #' + id);
  return e;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: (Node | string | null)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null) e.append(k);
  return e;
}

function fmtTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !isFinite(ms) || ms <= 0) return '—';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return ms + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
  return Math.round(ms / 60000) + ' min';
}

function shorten(s: string, n: number): string {
  if (s.length <= n) return s;
  const h = Math.floor((n - 1) / 2);
  return s.slice(0, h) + '…' + s.slice(s.length - (n - 1 - h));
}

function kindName(t: string): string {
  return t === 'JOB' ? 'Job' : 'Dataset';
}


// ---------------------------------------------------------------- sources

type SourceListener = () => void;

/** One watched lineage query: the centre, or an expanded node. */
class Source {
  snapshot: Lineage | null = null;
  error: ApiError | null = null;
  private es: EventSource | null = null;
  private timer: number | undefined;
  private closed = false;
  private abort = new AbortController();

  constructor(
    readonly nodeId: string,
    readonly up: number,
    readonly down: number,
    readonly max: number,
    private readonly useSSE: boolean,
    private readonly changed: SourceListener,
    private readonly failed: (e: ApiError) => void,
    private readonly status: () => void,
  ) {}

  static keyOf(n: string, up: number, down: number, max: number): string {
    return up + '/' + down + '/' + max + '/' + n;
  }
  get live(): boolean {
    return this.es !== null && this.es.readyState === EventSource.OPEN;
  }
  /** This source holds (or tries to hold) an event stream. */
  get streaming(): boolean {
    return this.useSSE && !this.closed;
  }

  start(): void {
    // The boot script may have started reading this query while the bundle
    // loaded: its answer is the first snapshot unless the stream is faster.
    const early = takeEarly(this.nodeId, this.up, this.down, this.max);
    const sse = this.useSSE && typeof EventSource !== 'undefined';
    if (early) {
      void early.then((l) => {
        mark('earlyAt');
        if (this.closed) return;
        if (l && !this.snapshot && !this.error) this.accept(l);
        if (!sse) {
          if (!l) void this.fetchOnce(false);
          return;
        }
        // The stream's first event is the same snapshot again (for a big
        // neighbourhood, hundreds of KB to receive and parse on the main
        // thread): opened after the frame that draws the early answer, so
        // that it does not delay it. Every event is a whole snapshot:
        // nothing written meanwhile is missed.
        if (l) requestAnimationFrame(() => window.setTimeout(() => !this.closed && this.openSSE(), 0));
        else this.openSSE();
      });
      return;
    }
    if (sse) this.openSSE();
    else void this.fetchOnce(false);
  }

  close(): void {
    this.closed = true;
    this.abort.abort();
    if (this.es) this.es.close();
    this.es = null;
    window.clearTimeout(this.timer);
  }

  private openSSE(): void {
    const es = new EventSource('/api/lf/v1/watch?' + lineageQuery(this.nodeId, this.up, this.down, this.max));
    this.es = es;
    // The first event may repeat the snapshot of the boot script's read
    // (no render then): the status must still turn live.
    es.addEventListener('open', () => this.status());
    es.addEventListener('lineage', (ev) => {
      mark('sseAt');
      this.accept(JSON.parse((ev as MessageEvent).data) as Lineage);
      mark('sseParsedAt');
    });
    es.addEventListener('error', (ev) => this.onError(es, (ev as MessageEvent).data));
  }

  private onError(es: EventSource, data: unknown): void {
    if (this.closed) return;
    if (typeof data === 'string' && data !== '') {
      // The server's own `event: error` (the graph is down): the stream stays open.
      let cls = 'error';
      let msg = data;
      try {
        const j = JSON.parse(data);
        cls = j.error || cls;
        msg = j.message || msg;
      } catch {
        /* plain text */
      }
      this.fail(new ApiError(cls === 'graph_unreachable' ? 503 : 500, msg, cls));
      return;
    }
    if (es.readyState === EventSource.CLOSED) {
      // Refused (503, 404, not an event stream): ask /lineage what is wrong,
      // use its answer, and try the stream again later.
      this.es = null;
      void this.fetchOnce(true);
    } else {
      this.fail(new ApiError(0, 'the connection to the explorer server was lost; reconnecting'));
    }
  }

  private async fetchOnce(retrySSE: boolean): Promise<void> {
    try {
      this.accept(await fetchLineage(this.nodeId, this.up, this.down, this.max, this.abort.signal));
    } catch (e) {
      if (this.closed || (e as Error).name === 'AbortError') return;
      this.fail(e instanceof ApiError ? e : new ApiError(0, String(e)));
    }
    if (this.closed) return;
    this.timer = window.setTimeout(() => {
      if (this.closed) return;
      if (retrySSE) this.openSSE();
      else void this.fetchOnce(false);
    }, RETRY_MS);
  }

  private accept(l: Lineage): void {
    if (this.closed) return;
    const wasError = this.error !== null;
    this.error = null;
    if (!wasError && this.snapshot && this.snapshot.version === l.version && l.version) return;
    this.snapshot = l;
    this.changed();
  }

  private fail(e: ApiError): void {
    if (this.closed) return;
    this.error = e;
    this.failed(e);
  }
}

// ---------------------------------------------------------------- the app

interface TestHooks {
  cy: cytoscape.Core;
  renders: number;
  lastRenderMs: number;
  ready: boolean;
  interactiveAt: number; // performance.now() of the first frame after the first complete render
  timings: Record<string, number>; // ms of the parts of the last render
  marks: Record<string, number>; // performance.now() of the first time of each step of the page's start (mark)
  errors: string[];
  state: () => ViewState;
}

class App {
  private state: ViewState = readURL();
  private sources = new Map<string, Source>();
  private nodes = new Map<string, LNode>();
  private edges = new Map<string, LEdge>();
  private cy: cytoscape.Core;
  private relayout = true;
  private detailsAbort: AbortController | null = null;
  private detailsFor: string | null = null;
  private renderQueued = false;
  private revealNew = false; // the user expanded a node: pan to show what it adds
  private bigStyle = false; // STYLE_BIG is in use (more than DAGRE_MAX_NODES nodes)
  private listGen = 0; // renders of the lists: a newer one cancels an older one's pending rows
  readonly hooks: TestHooks;

  constructor() {
    mark('appAt');
    this.cy = cytoscape({
      container: $('cy'),
      wheelSensitivity: 0.3,
      minZoom: 0.05,
      maxZoom: 3,
      boxSelectionEnabled: false,
      hideEdgesOnViewport: false,
      textureOnViewport: false,
      autoungrabify: false,
      style: STYLE,
    });
    mark('cyAt');
    this.hooks = { cy: this.cy, renders: 0, lastRenderMs: 0, ready: false, interactiveAt: 0, timings: {}, marks, errors: [], state: () => ({ ...this.state }) };
    (window as unknown as { __lf: TestHooks }).__lf = this.hooks;
    window.addEventListener('error', (e) => this.hooks.errors.push(String(e.message)));
    window.addEventListener('unhandledrejection', (e) => this.hooks.errors.push(String(e.reason)));

    this.cy.on('viewport', () => this.queueLabels());
    this.cy.on('tap', 'node', (ev) => {
      const id = ev.target.id() as string;
      this.select(id, true);
      this.expand(id);
    });
    this.cy.on('tap', (ev) => {
      if (ev.target === this.cy) this.select(null, true);
    });
    $('cy').addEventListener('keydown', (ev) => this.graphKey(ev));
    window.addEventListener('popstate', () => {
      const prev = this.state;
      this.state = readURL();
      this.relayout = prev.node !== this.state.node || prev.ds !== this.state.ds;
      this.sync();
    });

    this.setupDepth();
    this.setupSearch();
    // An empty explorer is a search box: type at once.
    if (!this.state.node) ($('search-input') as HTMLInputElement).focus();
    $('fit').addEventListener('click', () => this.cy.fit(undefined, 30));
    const ds = $('ds-only') as HTMLInputElement;
    ds.addEventListener('change', () => {
      this.state.ds = ds.checked;
      this.relayout = true;
      this.push(false);
      this.sync();
    });
    this.sync();
  }

  // ------------------------------------------------------------ state

  private push(newEntry: boolean): void {
    const u = urlOf(this.state);
    if (u === location.pathname + location.search) return;
    if (newEntry) history.pushState(null, '', u);
    else history.replaceState(null, '', u);
  }

  /** Open the lineage of a node (search result, "focus" button). */
  focus(id: string): void {
    this.state = { node: id, up: 1, down: 1, sel: id, x: [], ds: this.state.ds, max: this.state.max };
    this.relayout = true;
    this.push(true);
    this.sync();
  }

  private expand(id: string): void {
    const n = this.nodes.get(id);
    if (!n || !this.state.node) return;
    const m = this.moreOf(id);
    if (m.up + m.down === 0) return;
    if (id === this.state.node || this.state.x.includes(id)) return;
    this.state.x = [...this.state.x, id];
    this.revealNew = true;
    this.push(false);
    this.sync();
  }

  /** Makes sources, controls and details follow this.state. */
  private sync(): void {
    const s = this.state;
    ($('up-val') as HTMLOutputElement).value = String(s.up);
    ($('down-val') as HTMLOutputElement).value = String(s.down);
    ($('ds-only') as HTMLInputElement).checked = s.ds;
    ($('up-dec') as HTMLButtonElement).disabled = !s.node || s.up <= 0;
    ($('down-dec') as HTMLButtonElement).disabled = !s.node || s.down <= 0;
    ($('up-inc') as HTMLButtonElement).disabled = !s.node || s.up >= MAX_DEPTH;
    ($('down-inc') as HTMLButtonElement).disabled = !s.node || s.down >= MAX_DEPTH;
    $('empty').hidden = !!s.node;

    const want = new Map<string, [string, number, number]>();
    if (s.node) {
      // In the dataset-only view a depth step is dataset -> job -> dataset:
      // two hops of the graph.
      const k = s.ds ? 2 : 1;
      const [up, down] = centreDepths(s);
      want.set(Source.keyOf(s.node, up, down, s.max), [s.node, up, down]);
      for (const x of s.x) want.set(Source.keyOf(x, k, k, s.max), [x, k, k]);
    }
    for (const [k, src] of this.sources) {
      if (!want.has(k)) {
        src.close();
        this.sources.delete(k);
      }
    }
    let sse = 0;
    for (const src of this.sources.values()) if (src.streaming) sse++;
    for (const [k, [n, up, down]] of want) {
      if (this.sources.has(k)) continue;
      const src = new Source(n, up, down, s.max, sse < MAX_SSE, () => this.queueRender(), (e) => this.showError(e), () => this.updateStatus());
      sse++;
      this.sources.set(k, src);
      src.start();
    }
    this.render();
    this.showDetails(s.sel);
  }

  // ------------------------------------------------------------ status

  private updateStatus(): void {
    const st = $('status');
    let loading = false;
    let live = this.sources.size > 0;
    for (const s of this.sources.values()) {
      if (!s.snapshot && !s.error) loading = true;
      if (!s.live) live = false;
    }
    let err: ApiError | null = null;
    for (const s of this.sources.values()) if (s.error) err = err && err.graphDown ? err : s.error;
    st.className = 'status' + (err ? ' down' : loading ? ' loading' : live ? ' live' : '');
    st.textContent = err ? (err.graphDown ? 'Graph unreachable' : 'Error') : loading ? 'Loading…' : live ? 'Live' : this.sources.size ? 'Not live' : '';
    this.banner(err);
    st.setAttribute('aria-busy', String(loading));
  }

  private bannerExtra: ApiError | null = null;

  private showError(e: ApiError): void {
    this.updateStatus();
    if (!this.sources.size) this.banner(e);
  }

  private banner(e: ApiError | null): void {
    const b = $('banner');
    e = e || this.bannerExtra;
    if (!e) {
      b.hidden = true;
      b.textContent = '';
      b.removeAttribute('data-error');
      return;
    }
    let text: string;
    if (e.graphDown) {
      text = 'The lineage graph is unreachable' + (e.errorClass ? ' (' + e.errorClass + ')' : '') + ': ' + e.message + '. Retrying…';
    } else if (e.status === 404) {
      text = 'Not found: ' + e.message;
    } else if (e.status === 0) {
      text = 'The explorer server cannot be reached: ' + e.message + '.';
    } else {
      text = 'Error ' + e.status + ': ' + e.message;
    }
    b.textContent = text;
    b.setAttribute('data-error', e.graphDown ? 'graph_unreachable' : String(e.status));
    b.hidden = false;
  }

  // ------------------------------------------------------------ graph

  private queueRender(): void {
    // The view's first complete answer is drawn at once: waiting for the
    // next animation frame would first paint the empty page.
    if (!this.hooks.ready && !this.renderQueued && this.allLoaded()) {
      this.render();
      return;
    }
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      this.render();
    });
  }

  private moreOf(id: string): { up: number; down: number } {
    let up = Infinity;
    let down = Infinity;
    for (const s of this.sources.values()) {
      const n = s.snapshot?.nodes.find((x) => x.id === id);
      if (!n) continue;
      up = Math.min(up, n.more?.up ?? 0);
      down = Math.min(down, n.more?.down ?? 0);
    }
    return { up: isFinite(up) ? up : 0, down: isFinite(down) ? down : 0 };
  }

  /** Rebuilds the drawn graph from the sources' latest snapshots. */
  render(): void {
    const t0 = performance.now();
    if (!this.hooks.ready) this.hooks.timings.renderStart = t0;
    this.nodes.clear();
    this.edges.clear();
    const more = new Map<string, { up: number; down: number }>();
    let truncated = false;
    for (const s of this.sources.values()) {
      if (!s.snapshot) continue;
      truncated = truncated || s.snapshot.truncated;
      for (const n of s.snapshot.nodes || []) {
        this.nodes.set(n.id, n);
        const m = more.get(n.id);
        const nu = n.more?.up ?? 0;
        const nd = n.more?.down ?? 0;
        more.set(n.id, m ? { up: Math.min(m.up, nu), down: Math.min(m.down, nd) } : { up: nu, down: nd });
      }
      for (const e of s.snapshot.edges || []) this.edges.set(e.id, e);
    }
    const ds = this.state.ds;
    const visN = new Map<string, LNode>();
    for (const n of this.nodes.values()) if (!ds || n.type === 'DATASET') visN.set(n.id, n);
    const visE = new Map<string, LEdge>();
    for (const e of this.edges.values()) {
      if (ds !== (e.type === 'DERIVES')) continue;
      if (visN.has(e.origin) && visN.has(e.destination)) visE.set(e.id, e);
    }

    const cy = this.cy;
    const hadNodes = cy.nodes().length > 0;
    const added: string[] = [];
    const datas = new Map<string, Record<string, unknown>>();
    for (const n of visN.values()) {
      datas.set(n.id, nodeData(n, more.get(n.id) || { up: 0, down: 0 }, n.id === this.state.node));
      if (cy.getElementById(n.id).empty()) added.push(n.id);
    }
    // A big neighbourhood gets the lighter style and is laid out here,
    // before its elements reach cytoscape: they are added at their final
    // positions (moving 1,000 drawn nodes afterwards costs a bounding-box
    // update and an event each).
    const big = visN.size > DAGRE_MAX_NODES;
    if (big !== this.bigStyle) {
      this.bigStyle = big;
      cy.style(big ? STYLE_BIG : STYLE);
    }
    let preset: RankLayout | null = null;
    if (big && added.length && (this.relayout || !hadNodes)) {
      preset = rankLayout(this.state.node, visN, visE, datas);
      this.hooks.timings.rankBFS = preset.ms;
    }
    const adds: cytoscape.ElementDefinition[] = [];
    cy.batch(() => {
      cy.edges().forEach((e) => {
        if (!visE.has(e.id())) e.remove();
      });
      cy.nodes().forEach((n) => {
        if (!visN.has(n.id())) n.remove();
      });
      for (const n of visN.values()) {
        const data = datas.get(n.id) as Record<string, unknown>;
        const cur = cy.getElementById(n.id);
        const p = preset ? preset.pos.get(n.id) : undefined;
        if (cur.nonempty()) {
          const old = cur.data();
          if (old.label !== data.label || old.more !== data.more || old.failed !== data.failed || old.center !== data.center) cur.data(data);
          if (p) cur.position(p);
        } else {
          adds.push(p ? { group: 'nodes', data, position: p } : { group: 'nodes', data });
        }
      }
      for (const e of visE.values()) {
        if (cy.getElementById(e.id).nonempty()) continue;
        adds.push({ group: 'edges', data: { id: e.id, source: e.origin, target: e.destination, type: e.type } });
      }
      if (adds.length) cy.add(adds);
    });

    const t1 = performance.now();
    if (preset) {
      this.fitBox(preset.box);
      this.revealNew = false;
    } else if (added.length) {
      if (this.relayout || !hadNodes) this.layoutAll();
      else {
        this.placeNew(added);
        if (this.revealNew) this.reveal(added);
      }
      this.revealNew = false;
    }
    if (this.relayout && cy.nodes().length && this.allLoaded()) {
      this.relayout = false;
    }
    this.queueLabels();
    const t2 = performance.now();
    this.highlight();
    const t3 = performance.now();
    this.renderList(visN, visE, more);
    const t4 = performance.now();
    this.hooks.timings = { ...this.hooks.timings, diff: t1 - t0, layout: t2 - t1, highlight: t3 - t2, list: t4 - t3 };
    this.updateStatus();
    $('nodecount').textContent = '(' + visN.size + (truncated ? ', truncated' : '') + ')';
    this.hooks.renders++;
    this.hooks.lastRenderMs = performance.now() - t0;
    this.hooks.ready = this.allLoaded() && cy.nodes().length > 0;
    if (this.hooks.ready && !this.hooks.interactiveAt) {
      cy.one('render', () => (this.hooks.timings.drawnAt = performance.now()));
      requestAnimationFrame(() => {
        mark('frameAt');
        window.setTimeout(() => (this.hooks.interactiveAt = performance.now()), 0);
      });
    }
    // A new version of the centre may change the selected node's details.
    if (this.state.sel && this.state.sel === this.detailsFor && !added.length) return;
    if (this.state.sel && visN.has(this.state.sel)) this.showDetails(this.state.sel, true);
  }

  private allLoaded(): boolean {
    for (const s of this.sources.values()) if (!s.snapshot) return false;
    return true;
  }

  private layoutAll(): void {
    const cy = this.cy;
    cy.layout({
      name: 'dagre',
      rankDir: 'LR',
      nodeSep: 14,
      rankSep: 42,
      edgeSep: 8,
      fit: true,
      padding: 30,
      animate: false,
    } as cytoscape.LayoutOptions).run();
    if (cy.zoom() > 1.4) {
      cy.zoom(1.4);
      cy.center();
    }
  }

  private labelsQueued = false;

  private queueLabels(): void {
    if (!this.bigStyle || this.labelsQueued) return;
    this.labelsQueued = true;
    window.setTimeout(() => {
      this.labelsQueued = false;
      this.labelsInView();
    }, 60);
  }

  /**
   * With the big style, gives the nodes in view their label (class lbl)
   * once the zoom makes labels readable; a label once given stays.
   */
  private labelsInView(): void {
    const cy = this.cy;
    if (!this.bigStyle || cy.zoom() * LABEL_FONT < LABEL_MIN_PX) return;
    const ext = cy.extent();
    const m = 150; // model units around the view: half a node plus panning slack
    cy.batch(() => {
      cy.nodes().forEach((n) => {
        if (n.hasClass('lbl')) return;
        const p = n.position();
        if (p.x >= ext.x1 - m && p.x <= ext.x2 + m && p.y >= ext.y1 - m && p.y <= ext.y2 + m) n.addClass('lbl');
      });
    });
  }

  /** Fits the viewport to a box of model coordinates (at most zoom 1.4), without measuring elements. */
  private fitBox(b: { x1: number; y1: number; x2: number; y2: number }): void {
    const cy = this.cy;
    const pad = 30;
    const zoom = Math.max(cy.minZoom(), Math.min(1.4, (cy.width() - 2 * pad) / (b.x2 - b.x1), (cy.height() - 2 * pad) / (b.y2 - b.y1)));
    cy.viewport({ zoom, pan: { x: (cy.width() - zoom * (b.x1 + b.x2)) / 2, y: (cy.height() - zoom * (b.y1 + b.y2)) / 2 } });
  }

  /**
   * Places new nodes next to an already placed neighbour (right of their
   * inputs, left of their outputs) in the first free row; old nodes stay.
   */
  private placeNew(ids: string[]): void {
    const cy = this.cy;
    const RANK = 200;
    const ROW = 56;
    const pending = new Set(ids);
    const pos: { x: number; y: number }[] = [];
    cy.nodes().forEach((n) => {
      if (!pending.has(n.id())) pos.push({ ...n.position() });
    });
    const free = (x: number, y: number): boolean => pos.every((p) => Math.abs(p.x - x) > RANK / 2 || Math.abs(p.y - y) > ROW * 0.8);
    const put = (id: string, x: number, y0: number): void => {
      let y = y0;
      for (let k = 1; !free(x, y) && k < 400; k++) y = y0 + (k % 2 ? 1 : -1) * Math.ceil(k / 2) * ROW;
      cy.getElementById(id).position({ x, y });
      pos.push({ x, y });
      pending.delete(id);
    };
    let progress = true;
    while (pending.size && progress) {
      progress = false;
      for (const id of [...pending]) {
        const node = cy.getElementById(id);
        const src = node.incomers('node').filter((n) => !pending.has(n.id()));
        const dst = node.outgoers('node').filter((n) => !pending.has(n.id()));
        if (src.nonempty()) {
          const p = src[0].position();
          put(id, p.x + RANK, p.y);
          progress = true;
        } else if (dst.nonempty()) {
          const p = dst[0].position();
          put(id, p.x - RANK, p.y);
          progress = true;
        }
      }
    }
    // Not connected to anything drawn: below the drawing.
    const bb = cy.nodes().filter((n) => !pending.has(n.id())).boundingBox({});
    let x = isFinite(bb.x1) ? bb.x1 : 0;
    const y = isFinite(bb.y2) ? bb.y2 + ROW : 0;
    for (const id of [...pending]) {
      put(id, x, y);
      x += RANK;
    }
  }

  /** Pans (and zooms out if needed) so that the given nodes are in view. */
  private reveal(ids: string[]): void {
    const cy = this.cy;
    const ext = cy.extent();
    const out = ids.some((id) => {
      const p = cy.getElementById(id).position();
      return p.x < ext.x1 || p.x > ext.x2 || p.y < ext.y1 || p.y > ext.y2;
    });
    if (!out) return;
    const zoom = Math.min(cy.zoom(), 1.4);
    cy.stop(true, false);
    cy.animate({ fit: { eles: cy.elements(), padding: 30 } }, { duration: 200, complete: () => {
      if (cy.zoom() > zoom) cy.zoom(zoom);
    } });
  }

  private highlight(): void {
    const cy = this.cy;
    const sel = this.state.sel ? cy.getElementById(this.state.sel) : null;
    cy.batch(() => {
      // Only the elements that have one: a class change restyles the element.
      cy.elements('.sel, .up, .down, .faded').removeClass('sel up down faded');
      if (!sel || sel.empty()) return;
      const up = sel.predecessors();
      const down = sel.successors();
      cy.elements().not(up).not(down).not(sel).addClass('faded');
      up.addClass('up');
      down.addClass('down');
      sel.addClass('sel');
      sel.select();
    });
  }

  private select(id: string | null, fromUser: boolean): void {
    this.state.sel = id;
    if (fromUser) this.push(false);
    this.highlight();
    this.renderListClasses();
    this.showDetails(id);
  }

  private graphKey(ev: KeyboardEvent): void {
    const sel = this.state.sel ? this.cy.getElementById(this.state.sel) : null;
    if (ev.key === 'Enter' && sel && sel.nonempty()) {
      this.expand(sel.id());
      ev.preventDefault();
      return;
    }
    if (!sel || sel.empty()) {
      if (ev.key.startsWith('Arrow') && this.state.node) {
        this.select(this.state.node, true);
        ev.preventDefault();
      }
      return;
    }
    let next: cytoscape.NodeCollection | null = null;
    if (ev.key === 'ArrowLeft') next = sel.incomers('node');
    else if (ev.key === 'ArrowRight') next = sel.outgoers('node');
    else if (ev.key === 'ArrowUp' || ev.key === 'ArrowDown') {
      const sx = sel.position().x;
      const col: cytoscape.NodeSingular[] = [];
      this.cy.nodes().forEach((n) => {
        if (Math.abs(n.position().x - sx) < 40) col.push(n);
      });
      col.sort((a, b) => a.position().y - b.position().y);
      const i = col.findIndex((n) => n.id() === sel.id());
      const j = ev.key === 'ArrowUp' ? i - 1 : i + 1;
      if (j >= 0 && j < col.length) next = this.cy.getElementById(col[j].id()) as unknown as cytoscape.NodeCollection;
    }
    if (next && next.nonempty()) {
      this.select(next[0].id(), true);
      this.cy.stop(true, false).animate({ center: { eles: next[0] } }, { duration: 150 });
      ev.preventDefault();
    }
  }

  // ------------------------------------------------------------ list view

  private renderList(visN: Map<string, LNode>, visE: Map<string, LEdge>, more: Map<string, { up: number; down: number }>): void {
    const ul = $('nodelist');
    const have = new Map<string, HTMLElement>();
    for (const li of Array.from(ul.children) as HTMLElement[]) have.set(li.dataset.nodeId || '', li);
    const order = [...visN.values()].sort((a, b) => COLLATOR.compare(a.type, b.type) || COLLATOR.compare(a.name, b.name) || COLLATOR.compare(a.id, b.id));
    const now = String(Date.now());
    // Items that are new or changed are written as HTML and parsed at once:
    // 1,000 items are ~8,000 DOM calls otherwise.
    const frag: (HTMLElement | null)[] = [];
    const html: string[] = [];
    for (const n of order) {
      const m = more.get(n.id) || { up: 0, down: 0 };
      const sig = [n.name, n.type, m.up, m.down, n.hasFailedRuns, n.id === this.state.node].join('|');
      const li = have.get(n.id);
      if (li && li.dataset.sig === sig) {
        frag.push(li);
        continue;
      }
      const label = kindName(n.type) + ' ' + n.name + ' in ' + n.namespace + (n.hasFailedRuns ? ', has failed runs' : '') +
        (m.up ? ', ' + m.up + ' more upstream' : '') + (m.down ? ', ' + m.down + ' more downstream' : '');
      const k = m.up + m.down;
      html.push('<li data-node-id="' + esc(n.id) + '" data-sig="' + esc(sig) + '" data-added-at="' + esc(li?.dataset.addedAt || now) + '">' +
        '<span class="kind ' + esc(n.type) + '" aria-hidden="true">' + (n.type === 'JOB' ? 'J' : 'D') + '</span>' +
        '<button type="button" class="nb" aria-label="' + esc(label) + '" title="' + esc(n.namespace + ' / ' + n.name) + '">' + esc(n.name) + '</button>' +
        (n.hasFailedRuns ? '<span class="badge-fail" aria-hidden="true">failed</span>' : '') +
        (k > 0 && n.id !== this.state.node && !this.state.x.includes(n.id)
          ? '<button type="button" class="xb" data-act="expand" aria-label="' + esc('Expand ' + n.name + ' (' + k + ' more)') + '">+' + k + '</button>'
          : '') +
        (n.id !== this.state.node ? '<button type="button" class="xb" data-act="focus" aria-label="' + esc('Open the lineage of ' + n.name) + '">open</button>' : '') +
        '</li>');
      frag.push(null);
    }
    let j = 0;
    const rows: (HTMLElement | string)[] = frag.map((li) => li || html[j++]);
    this.listGen++;
    this.fillList(ul, rows, this.listGen, true);
    if (!ul.dataset.wired) {
      ul.dataset.wired = '1';
      ul.addEventListener('click', (ev) => {
        const b = (ev.target as HTMLElement).closest('button');
        const li = (ev.target as HTMLElement).closest('li');
        if (!b || !li) return;
        const id = li.dataset.nodeId || '';
        const act = b.dataset.act;
        if (act === 'expand') this.expand(id);
        else if (act === 'focus') this.focus(id);
        else {
          this.select(id, true);
          const node = this.cy.getElementById(id);
          if (node.nonempty()) this.cy.stop(true, false).animate({ center: { eles: node } }, { duration: 150 });
        }
      });
    }

    const el2 = $('edgelist');
    const haveE = new Map<string, HTMLElement>();
    for (const li of Array.from(el2.children) as HTMLElement[]) haveE.set(li.dataset.edgeId || '', li);
    const items: (HTMLElement | null)[] = [];
    const ehtml: string[] = [];
    for (const e of visE.values()) {
      const li = haveE.get(e.id);
      if (li) {
        items.push(li);
        continue;
      }
      const a = visN.get(e.origin);
      const b = visN.get(e.destination);
      ehtml.push('<li data-edge-id="' + esc(e.id) + '" data-added-at="' + now + '" data-type="' + esc(e.type) + '" data-origin="' + esc(e.origin) +
        '" data-destination="' + esc(e.destination) + '">' + esc((a ? a.name : e.origin) + ' → ' + (b ? b.name : e.destination) + ' (' + e.type + ')') + '</li>');
      items.push(null);
    }
    let k = 0;
    this.fillList(el2, items.map((li) => li || ehtml[k++]), this.listGen, false);
  }

  /**
   * Puts rows (kept list items, or the HTML of new ones) into a list. A
   * long list (a big neighbourhood) gets its first LIST_FIRST rows at once
   * and the rest in idle tasks of LIST_CHUNK rows: parsing, styling and laying
   * out 1,000 rows of buttons in the same task and frame as the graph's
   * first draw delays the graph, and a user reads the first rows first.
   * Between the tasks the page answers input; a newer render (listGen)
   * cancels the rest.
   */
  private fillList(ul: HTMLElement, rows: (HTMLElement | string)[], gen: number, nodes: boolean): void {
    const mount = (from: number, to: number): HTMLElement[] => {
      const part = rows.slice(from, to);
      const made = parseItems(part.filter((r): r is string => typeof r === 'string'));
      let m = 0;
      return part.map((r) => (typeof r === 'string' ? made[m++] : r));
    };
    const first = rows.length > LIST_SYNC_MAX ? LIST_FIRST : rows.length;
    const head = mount(0, first);
    ul.replaceChildren(...head);
    if (nodes) this.renderListClasses(head);
    const next = (from: number): void => {
      if (gen !== this.listGen || from >= rows.length) return;
      const t = performance.now();
      const part = mount(from, from + LIST_CHUNK);
      ul.append(...part);
      if (nodes) this.renderListClasses(part);
      marks.listChunks = (marks.listChunks || 0) + 1;
      marks.listChunkMs = (marks.listChunkMs || 0) + performance.now() - t;
      if (from + LIST_CHUNK >= rows.length) mark(nodes ? 'nodeListAt' : 'edgeListAt');
      later(() => next(from + LIST_CHUNK));
    };
    if (first < rows.length) later(() => next(first));
  }

  private renderListClasses(lis?: HTMLElement[]): void {
    const cy = this.cy;
    for (const li of lis || (Array.from($('nodelist').children) as HTMLElement[])) {
      const n = cy.getElementById(li.dataset.nodeId || '');
      li.classList.toggle('selected', n.hasClass('sel'));
      li.classList.toggle('upstream', n.hasClass('up'));
      li.classList.toggle('downstream', n.hasClass('down'));
      const b = li.querySelector('.nb');
      if (b) b.setAttribute('aria-pressed', String(n.hasClass('sel')));
    }
  }

  // ------------------------------------------------------------ details

  private showDetails(id: string | null, refresh = false): void {
    const box = $('details');
    if (!id) {
      this.detailsFor = null;
      if (this.detailsAbort) this.detailsAbort.abort();
      box.replaceChildren(el('p', { class: 'hint' }, 'Select a node to see its details.'));
      return;
    }
    if (id === this.detailsFor && !refresh) return;
    if (this.detailsAbort) this.detailsAbort.abort();
    const ab = new AbortController();
    this.detailsAbort = ab;
    if (id !== this.detailsFor) {
      box.setAttribute('aria-busy', 'true');
      box.replaceChildren(el('p', { class: 'hint' }, 'Loading details…'));
    }
    this.detailsFor = id;
    fetchNode(id, ab.signal).then(
      (d) => {
        if (ab.signal.aborted) return;
        box.removeAttribute('aria-busy');
        box.replaceChildren(...this.detailsView(d));
        if (d.type === 'DATASET') {
          this.producers(d, box, ab.signal);
          this.columnLineage(d, box, ab.signal);
        }
      },
      (e) => {
        if (ab.signal.aborted || (e as Error).name === 'AbortError') return;
        box.removeAttribute('aria-busy');
        const err = e instanceof ApiError ? e : new ApiError(0, String(e));
        box.replaceChildren(el('p', { class: 'hint', role: 'alert' }, 'Details unavailable: ' + err.message));
        if (err.graphDown) this.showError(err);
      },
    );
  }

  /**
   * Adds "Produced by" to a dataset's details: the jobs writing it, each
   * with its newest failed run (time and error) when it has one, so that
   * "who feeds this table, and did last night's run fail?" needs no click.
   */
  private producers(d: NodeDetails, box: HTMLElement, signal: AbortSignal): void {
    const jobs = (d.inputs || []).filter((id) => id.startsWith('job:')).slice(0, MAX_PRODUCERS);
    if (!jobs.length) return;
    const ul = el('ul', { id: 'producers', 'aria-label': 'Jobs writing this dataset' });
    const items = new Map<string, HTMLElement>();
    for (const id of jobs) {
      const n = this.nodes.get(id);
      const name = n ? n.name : id.replace(/^job:/, '');
      const b = el('button', { type: 'button', class: 'link', 'data-act': 'select' }, name);
      b.addEventListener('click', () => {
        if (this.cy.getElementById(id).nonempty()) this.select(id, true);
        else this.focus(id);
      });
      const li = el('li', { 'data-node-id': id }, b, el('span', { class: 'hint' }, ' …'));
      items.set(id, li);
      ul.append(li);
    }
    box.append(el('h3', {}, 'Produced by'), ul);
    for (const id of jobs) {
      fetchNode(id, signal).then(
        (j) => {
          if (signal.aborted) return;
          const li = items.get(id) as HTMLElement;
          const failed = (j.runs || []).find((r) => r.state === 'FAIL' || r.state === 'ABORT');
          const info = failed
            ? el('div', { class: 'failed-run', 'data-run-id': failed.runId },
                el('span', { class: 'state ' + failed.state }, failed.state), ' ', fmtTime(failed.startedAt ?? failed.endedAt ?? failed.updatedAt),
                failed.errorMessage ? el('div', { class: 'error-message', title: failed.errorMessage }, shorten(failed.errorMessage, 300)) : null)
            : el('span', { class: 'hint' }, ' no failed run recorded');
          li.replaceChild(info, li.lastChild as Node);
        },
        () => {
          /* unreadable job details: the job's own details say why */
        },
      );
    }
  }

  /** Adds the dataset's column lineage (each field and the fields it comes from), if the graph has any. */
  private columnLineage(d: NodeDetails, box: HTMLElement, signal: AbortSignal): void {
    fetchColumnLineage(d.id, signal).then(
      (graph) => {
        if (signal.aborted) return;
        const rows: HTMLElement[] = [];
        for (const f of graph) {
          const x = f.data;
          if (!x || x.namespace !== d.namespace || x.dataset !== d.name || !x.inputFields || !x.inputFields.length) continue;
          for (const i of x.inputFields) {
            rows.push(el('tr', { 'data-field': x.field },
              el('td', {}, x.field),
              el('td', { title: i.namespace }, i.dataset + '.' + i.field),
              el('td', { title: x.transformationDescription || '' }, x.transformationType || '')));
          }
        }
        if (!rows.length) return;
        rows.sort((a, b) => (a.dataset.field || '').localeCompare(b.dataset.field || ''));
        box.append(el('h3', {}, 'Column lineage'),
          el('table', { 'aria-label': 'Column lineage', id: 'column-lineage' },
            el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Field'), el('th', { scope: 'col' }, 'From'), el('th', { scope: 'col' }, 'Transformation'))),
            el('tbody', {}, ...rows)));
      },
      () => {
        /* no column lineage (older graph, or none recorded): the section is left out */
      },
    );
  }

  private detailsView(d: NodeDetails): Node[] {
    const props = { ...(d.properties || {}) } as Record<string, unknown>;
    const out: Node[] = [];
    const runs = d.runs || [];
    const failed = runs.filter((r) => r.state === 'FAIL' || r.state === 'ABORT').length;
    out.push(el('div', {}, el('span', { class: 'kind ' + d.type }, kindName(d.type)), ' ',
      failed ? el('span', { class: 'badge-fail', 'data-failed-runs': String(failed) }, failed + ' failed run' + (failed > 1 ? 's' : '')) : null));
    out.push(el('h2', { id: 'details-title' }, d.name));
    const dl = el('dl', {});
    const row = (k: string, v: Node | string): void => {
      dl.append(el('dt', {}, k), el('dd', {}, v));
    };
    row('Namespace', d.namespace);
    const owners = parseJSON(props.owners);
    delete props.owners;
    if (owners) row('Owner', ownersText(owners));
    row('First seen', fmtTime(d.firstSeen));
    row('Last seen', fmtTime(d.lastSeen));
    row('Last run id', d.lastRunId || '—');
    for (const k of ['description', 'jobType', 'processingType', 'integration', 'dataSource', 'version', 'lifecycleState']) {
      if (props[k] !== undefined && props[k] !== '') {
        row(k, String(props[k]));
        delete props[k];
      }
    }
    out.push(dl);
    const focusBtn = el('button', { type: 'button', class: 'link', 'data-act': 'focus' }, 'Open lineage here');
    focusBtn.addEventListener('click', () => this.focus(d.id));
    out.push(el('p', {}, focusBtn));

    if (d.aliases && d.aliases.length) {
      out.push(el('h3', {}, 'Aliases'));
      out.push(el('ul', {}, ...d.aliases.map((a) => el('li', {}, a.namespace + ' / ' + a.name + (a.type ? ' (' + a.type + ')' : '')))));
    }
    const schema = parseJSON(props.schema);
    delete props.schema;
    if (Array.isArray(schema) && schema.length) {
      out.push(el('h3', {}, 'Schema'));
      const t = el('table', { 'aria-label': 'Schema' }, el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Field'), el('th', { scope: 'col' }, 'Type'), el('th', { scope: 'col' }, 'Description'))));
      const tb = el('tbody', {});
      for (const f of schema as Record<string, unknown>[]) {
        tb.append(el('tr', {}, el('td', {}, String(f.name ?? '')), el('td', {}, String(f.type ?? '')), el('td', {}, String(f.description ?? ''))));
      }
      t.append(tb);
      out.push(t);
    }
    if (d.type === 'JOB' || runs.length) {
      out.push(el('h3', {}, 'Last runs'));
      if (!runs.length) out.push(el('p', { class: 'hint' }, 'No runs recorded.'));
      else {
        const t = el('table', { 'aria-label': 'Last runs', id: 'runs' }, el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'State'), el('th', { scope: 'col' }, 'Started'), el('th', { scope: 'col' }, 'Duration'), el('th', { scope: 'col' }, 'Run id'))));
        const tb = el('tbody', {});
        for (const r of runs) {
          tb.append(el('tr', { 'data-run-state': r.state },
            el('td', {}, el('span', { class: 'state ' + r.state }, r.state)),
            el('td', {}, fmtTime(r.startedAt)),
            el('td', {}, fmtDuration(r.durationMs)),
            el('td', { title: r.errorMessage || '' }, shorten(r.runId, 14), r.errorMessage ? el('div', { class: 'hint' }, shorten(r.errorMessage, 160)) : null)));
        }
        t.append(tb);
        out.push(t);
      }
    }
    const sql = props.sql;
    delete props.sql;
    if (typeof sql === 'string' && sql) {
      out.push(el('h3', {}, 'SQL'));
      out.push(el('pre', {}, sql));
    }
    for (const k of ['namespace', 'name']) delete props[k];
    const rest = Object.keys(props).sort();
    if (rest.length) {
      out.push(el('h3', {}, 'Facets and properties'));
      const pdl = el('dl', {});
      for (const k of rest) {
        const v = props[k];
        const txt = typeof v === 'string' ? v : JSON.stringify(v);
        pdl.append(el('dt', {}, k), el('dd', {}, txt.length > 200 ? el('pre', {}, txt) : txt));
      }
      out.push(pdl);
    }
    return out;
  }

  // ------------------------------------------------------------ depth

  private setupDepth(): void {
    const step = (which: 'up' | 'down', d: number) => () => {
      if (!this.state.node) return;
      const v = clampDepth(this.state[which] + d, this.state[which]);
      if (v === this.state[which]) return;
      this.state[which] = v;
      this.relayout = true;
      this.push(false);
      this.sync();
    };
    $('up-dec').addEventListener('click', step('up', -1));
    $('up-inc').addEventListener('click', step('up', 1));
    $('down-dec').addEventListener('click', step('down', -1));
    $('down-inc').addEventListener('click', step('down', 1));
  }

  // ------------------------------------------------------------ search

  private setupSearch(): void {
    const input = $('search-input') as HTMLInputElement;
    const list = $('search-results');
    let results: SearchResult[] = [];
    let active = -1;
    let timer: number | undefined;
    let ab: AbortController | null = null;

    const close = (): void => {
      list.hidden = true;
      input.setAttribute('aria-expanded', 'false');
      input.removeAttribute('aria-activedescendant');
      active = -1;
    };
    const mark = (): void => {
      Array.from(list.children).forEach((li, i) => li.setAttribute('aria-selected', String(i === active)));
      if (active >= 0) {
        input.setAttribute('aria-activedescendant', 'sr-' + active);
        (list.children[active] as HTMLElement).scrollIntoView({ block: 'nearest' });
      } else input.removeAttribute('aria-activedescendant');
    };
    const choose = (i: number): void => {
      const r = results[i];
      if (!r) return;
      close();
      input.value = r.name;
      this.focus(r.id);
    };
    const show = (): void => {
      list.replaceChildren(
        ...results.map((r, i) => {
          const li = el('li', { id: 'sr-' + i, role: 'option', 'aria-selected': 'false', 'data-node-id': r.id },
            el('span', { class: 'kind ' + r.type }, kindName(r.type)),
            el('span', {}, r.name),
            el('span', { class: 'ns' }, r.namespace + (r.matchedAlias ? ' · alias ' + r.matchedAlias.name : '')));
          li.addEventListener('mousedown', (ev) => {
            ev.preventDefault();
            choose(i);
          });
          return li;
        }),
      );
      if (!results.length) list.replaceChildren(el('li', { role: 'option', 'aria-disabled': 'true', 'aria-selected': 'false', class: 'none' }, 'No match'));
      list.hidden = false;
      input.setAttribute('aria-expanded', 'true');
      active = results.length ? 0 : -1;
      mark();
    };
    const run = (): void => {
      const q = input.value.trim();
      if (ab) ab.abort();
      if (!q) {
        results = [];
        close();
        return;
      }
      ab = new AbortController();
      const mine = ab;
      search(q, 20, mine.signal).then(
        (r) => {
          if (mine.signal.aborted) return;
          results = r;
          this.bannerExtra = null;
          this.updateStatus();
          show();
        },
        (e) => {
          if (mine.signal.aborted || (e as Error).name === 'AbortError') return;
          this.bannerExtra = e instanceof ApiError ? e : new ApiError(0, String(e));
          this.banner(this.bannerExtra);
        },
      );
    };
    input.addEventListener('input', () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(run, 120);
    });
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
        if (list.hidden) {
          run();
          ev.preventDefault();
          return;
        }
        const n = results.length;
        if (!n) return;
        active = ev.key === 'ArrowDown' ? (active + 1) % n : (active - 1 + n) % n;
        mark();
        ev.preventDefault();
      } else if (ev.key === 'Enter') {
        if (!list.hidden && active >= 0) choose(active);
        ev.preventDefault();
      } else if (ev.key === 'Escape') {
        close();
      }
    });
    input.addEventListener('blur', () => window.setTimeout(close, 100));
  }
}

const COLLATOR = new Intl.Collator();

/** s with the characters that are special in HTML text and attribute values escaped. */
function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

/** The elements of the given HTML snippets (one element each, escaped with esc), parsed at once. */
function parseItems(html: string[]): HTMLElement[] {
  if (!html.length) return [];
  const t = document.createElement('template');
  t.innerHTML = html.join('');
  return Array.from(t.content.children) as HTMLElement[];
}

function parseJSON(v: unknown): unknown {
  if (typeof v !== 'string') return v ?? null;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

function ownersText(o: unknown): string {
  if (Array.isArray(o)) {
    return o.map((x) => (typeof x === 'object' && x ? String((x as Record<string, unknown>).name ?? JSON.stringify(x)) + ((x as Record<string, unknown>).type ? ' (' + (x as Record<string, unknown>).type + ')' : '') : String(x))).join(', ');
  }
  if (o && typeof o === 'object' && Array.isArray((o as Record<string, unknown>).owners)) return ownersText((o as Record<string, unknown>).owners);
  return typeof o === 'string' ? o : JSON.stringify(o);
}

/**
 * Splits a long name into lines of at most `width` characters, after the
 * separators of dataset and job names (. / _ | : - space), so that the
 * drawing stays narrow; at most 3 lines, the middle elided.
 */
function wrapName(name: string, width: number): string[] {
  const parts = name.match(/[^./_|:\- ]*[./_|:\- ]?/g)?.filter((p) => p !== '') || [name];
  const lines: string[] = [];
  let cur = '';
  for (let p of parts) {
    while (p.length > width) {
      if (cur) lines.push(cur);
      cur = '';
      lines.push(p.slice(0, width));
      p = p.slice(width);
    }
    if ((cur + p).length > width && cur) {
      lines.push(cur);
      cur = '';
    }
    cur += p;
  }
  if (cur) lines.push(cur);
  if (lines.length > 3) return [lines[0], '…', lines[lines.length - 1]];
  return lines;
}

interface RankLayout {
  pos: Map<string, { x: number; y: number }>;
  box: { x1: number; y1: number; x2: number; y2: number }; // of the nodes, with their sizes
  ms: number;
}

/**
 * The layout of big neighbourhoods, where dagre's crossing minimisation
 * takes seconds: rank = signed hops from the centre (left upstream, right
 * downstream), order in a rank by the order of the neighbours one rank
 * nearer the centre (a breadth-first tree from the centre has no crossing
 * then). O(n log n) over plain maps, before the elements reach cytoscape.
 */
function rankLayout(centerId: string | null, visN: Map<string, LNode>, visE: Map<string, LEdge>, datas: Map<string, Record<string, unknown>>): RankLayout {
  const tl0 = performance.now();
  const outs = new Map<string, string[]>();
  const ins = new Map<string, string[]>();
  for (const e of visE.values()) {
    if (!outs.has(e.origin)) outs.set(e.origin, []);
    (outs.get(e.origin) as string[]).push(e.destination);
    if (!ins.has(e.destination)) ins.set(e.destination, []);
    (ins.get(e.destination) as string[]).push(e.origin);
  }
  const center = centerId && visN.has(centerId) ? centerId : (visN.keys().next().value as string);
  const rank = new Map<string, number>([[center, 0]]);
  const parent = new Map<string, string>();
  const queue = [center];
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i];
    const r = rank.get(id) as number;
    const visit = (m: string, d: number): void => {
      if (rank.has(m)) return;
      rank.set(m, r + d);
      parent.set(m, id);
      queue.push(m);
    };
    const o = outs.get(id) || [];
    const n = ins.get(id) || [];
    // Away from the centre first, so that a node keeps its side.
    if (r >= 0) o.forEach((m) => visit(m, 1));
    if (r <= 0) n.forEach((m) => visit(m, -1));
    o.forEach((m) => visit(m, 1));
    n.forEach((m) => visit(m, -1));
  }
  let minR = 0;
  for (const id of visN.keys()) {
    if (!rank.has(id)) rank.set(id, --minR - 1000); // unconnected: own columns, placed left below
  }
  const byRank = new Map<number, string[]>();
  for (const [id, r] of rank) {
    if (!byRank.has(r)) byRank.set(r, []);
    (byRank.get(r) as string[]).push(id);
  }
  const ranks = [...byRank.keys()].filter((r) => r > -1000).sort((a, b) => Math.abs(a) - Math.abs(b) || a - b);
  const index = new Map<string, number>();
  const ROW = 50;
  const RANK = 230;
  const COL = 40; // a wider rank is wrapped into sub-columns of this many nodes
  const pos = new Map<string, { x: number; y: number }>();
  const cols = (r: number): number => Math.ceil((byRank.get(r) as string[]).length / COL);
  // x of each rank: ranks further from the centre start after the sub-columns of the nearer ones.
  const xOf = new Map<number, number>([[0, 0]]);
  for (let r = 1; byRank.has(r); r++) xOf.set(r, (xOf.get(r - 1) as number) + (cols(r - 1) - 1) * (RANK * 0.8) + RANK);
  for (let r = -1; byRank.has(r); r--) xOf.set(r, (xOf.get(r + 1) as number) - (cols(r) - 1) * (RANK * 0.8) - RANK);
  for (const r of ranks) {
    const ids = byRank.get(r) as string[];
    ids.sort((a, b) => (index.get(parent.get(a) || '') ?? 0) - (index.get(parent.get(b) || '') ?? 0) || (a < b ? -1 : a > b ? 1 : 0));
    const rows = Math.min(COL, ids.length);
    const x0 = xOf.get(r) ?? r * RANK;
    ids.forEach((id, i) => {
      index.set(id, i);
      const c = Math.floor(i / COL);
      pos.set(id, { x: x0 + c * RANK * 0.8, y: ((i % COL) - (rows - 1) / 2) * ROW });
    });
  }
  let x = 0;
  for (const [r, ids] of byRank) {
    if (r > -1000) continue;
    ids.forEach((id, i) => pos.set(id, { x, y: (i + 1) * ROW + 2000 }));
    x += RANK;
  }
  // The box from the known node sizes: a fit would measure every label.
  const box = { x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity };
  for (const [id, p] of pos) {
    const d = datas.get(id);
    const w = (d ? (d.w as number) : 60) / 2;
    const h = (d ? (d.h as number) : 30) / 2;
    box.x1 = Math.min(box.x1, p.x - w);
    box.x2 = Math.max(box.x2, p.x + w);
    box.y1 = Math.min(box.y1, p.y - h);
    box.y2 = Math.max(box.y2, p.y + h);
  }
  return { pos, box, ms: performance.now() - tl0 };
}

function nodeData(n: LNode, m: { up: number; down: number }, center: boolean): Record<string, unknown> {
  const extra: string[] = [];
  if (m.up) extra.push('◂ ' + m.up + ' more');
  if (m.down) extra.push(m.down + ' more ▸');
  const lines = wrapName(n.name, 20);
  if (n.hasFailedRuns) lines.push('⚠ failed runs');
  if (extra.length) lines.push(extra.join('   '));
  const longest = Math.max(...lines.map((l) => l.length));
  return {
    id: n.id,
    label: lines.join('\n'),
    type: n.type,
    failed: n.hasFailedRuns ? 1 : 0,
    center: center ? 1 : 0,
    more: m.up + m.down,
    w: Math.max(60, Math.min(300, longest * 7.6 + 18)),
    h: 14 + lines.length * 16,
  };
}

const STYLE: cytoscape.StylesheetJson = [
  {
    selector: 'node',
    style: {
      shape: 'round-rectangle',
      width: 'data(w)',
      height: 'data(h)',
      label: 'data(label)',
      'text-wrap': 'wrap',
      'text-valign': 'center',
      'text-halign': 'center',
      'font-size': LABEL_FONT,
      'font-family': 'system-ui, sans-serif',
      'min-zoomed-font-size': LABEL_MIN_PX,
      color: '#1d2330',
      'background-color': '#e8f0fd',
      'border-width': 1.5,
      'border-color': '#2f6fde',
    },
  },
  { selector: 'node[type = "JOB"]', style: { shape: 'cut-rectangle', 'background-color': '#efeafb', 'border-color': '#6b4fbb' } },
  { selector: 'node[failed = 1]', style: { 'border-color': '#d12d2d', 'border-width': 2.5, 'border-style': 'dashed' } },
  { selector: 'node[center = 1]', style: { 'border-width': 3, 'font-weight': 'bold' } },
  {
    selector: 'edge',
    style: {
      width: 1.5,
      'line-color': '#9aa3b5',
      'target-arrow-color': '#9aa3b5',
      'target-arrow-shape': 'triangle',
      'curve-style': 'straight',
      'arrow-scale': 0.9,
    },
  },
  { selector: 'edge[type = "DERIVES"]', style: { 'line-style': 'dashed' } },
  { selector: '.up', style: { 'border-color': '#0a8f6a', 'line-color': '#0a8f6a', 'target-arrow-color': '#0a8f6a' } },
  { selector: '.down', style: { 'border-color': '#d9822b', 'line-color': '#d9822b', 'target-arrow-color': '#d9822b' } },
  { selector: 'node.up, node.down', style: { 'border-width': 2.5 } },
  { selector: '.sel', style: { 'border-color': '#111', 'border-width': 3.5, 'overlay-opacity': 0 } },
  { selector: '.faded', style: { opacity: 0.35 } },
  { selector: 'node:selected', style: { 'overlay-opacity': 0 } },
];

// Above DAGRE_MAX_NODES: nodes without labels until the user zooms in far
// enough to read them (labelsInView: measuring and caching 1,000 labels
// is a third of the first frame, and at the zoom that fits 1,000 nodes
// min-zoomed-font-size hides them anyway), and haystack edges (no edge-endpoint geometry to
// compute: the cheapest edges cytoscape draws) with a mid arrow for the
// direction.
// The label properties of nodes: in STYLE on every node, in STYLE_BIG only
// on the labelled ones (node.lbl).
const LABEL_PROPS = ['label', 'text-wrap', 'text-valign', 'text-halign', 'font-size', 'font-family', 'min-zoomed-font-size', 'color'];
// Cytoscape computes each element's style in the frame that first draws it,
// at a cost per property of every matching rule (each one that can change
// the bounds dirties the element's edges and notifies the renderer): the
// big style's unlabelled node has no label properties at all, and its edge
// no property with the default value.
const STYLE_BIG: cytoscape.StylesheetJson = STYLE.map((r) => {
  if (r.selector === 'edge') {
    return { selector: 'edge', style: { width: 1.5, 'line-color': '#9aa3b5', 'mid-target-arrow-color': '#9aa3b5', 'mid-target-arrow-shape': 'triangle', 'curve-style': 'haystack', 'arrow-scale': 0.9 } };
  }
  if (r.selector !== 'node') return r;
  const st = (r as unknown as { style: Record<string, unknown> }).style;
  return { selector: 'node', style: Object.fromEntries(Object.entries(st).filter(([k]) => !LABEL_PROPS.includes(k))) };
}).concat([
  {
    selector: 'node.lbl',
    style: Object.fromEntries(Object.entries((STYLE[0] as unknown as { style: Record<string, unknown> }).style).filter(([k]) => LABEL_PROPS.includes(k))),
  },
]) as cytoscape.StylesheetJson;

document.addEventListener('DOMContentLoaded', () => {
  new App();
});
