// The lineageflow explorer UI: a focused, live lineage view around one node.
//
// State lives in the URL (?node=&up=&down=&sel=&x=&view=), so every view is a
// deep link. The view is the union of "sources" (sources.ts): the centre node
// with the chosen depths, plus one source per node the user expanded, each
// watched live (source.ts). New nodes of a live update are placed next to
// their neighbours; nodes already drawn never move, and the user's zoom, pan
// and selection are kept (graph.ts).
//
// The App ties them together: URL state -> sources -> render (graph, list,
// details, status); user input (taps, keys, list, search, controls) ->
// state -> URL.
import { setTime } from './api';
import type { ApiError, LEdge, LNode } from './api';
import { HubDialog } from './hubs';
import { ImpactPanel } from './impact';
import { Landing } from './landing';
import { Details } from './details';
import { $ } from './dom';
import { GraphView } from './graph';
import { installHooks, mark, renderStarted, rendered } from './hooks';
import type { TestHooks } from './hooks';
import { graphKey } from './keyboard';
import { NodeList } from './list';
import { setupSearch } from './search';
import { Sources } from './sources';
import { MAX_DEPTH, clampDepth, readURL, urlOf } from './state';
import type { ViewState } from './state';
import { StatusBar } from './status';

class App {
  private state: ViewState = readURL();
  private nodes = new Map<string, LNode>(); // every node of the sources' snapshots
  private edges = new Map<string, LEdge>(); // the drawn edges
  private readonly sources: Sources;
  private readonly graph: GraphView;
  private readonly list: NodeList;
  private readonly details: Details;
  private readonly status = new StatusBar();
  private readonly hooks: TestHooks;
  private relayout = true;
  private renderQueued = false;
  private revealNew = false; // the user expanded a node: pan to show what it adds
  private ready = false; // every source answered and something is drawn
  private readonly landing: Landing;
  private readonly impact: ImpactPanel;
  private readonly hubs: HubDialog;
  private selSig = ''; // what the selected node's details were last read for (live refresh)

  constructor() {
    mark('appAt');
    this.graph = new GraphView($('cy'));
    mark('cyAt');
    this.hooks = installHooks(this.graph.cy, () => ({ ...this.state }));
    this.sources = new Sources({
      changed: () => this.queueRender(),
      failed: (e) => this.showError(e),
      status: () => this.updateStatus(),
    });
    this.list = new NodeList(this.graph, {
      select: (id) => this.select(id, true),
      expand: (id) => this.expand(id),
      focus: (id) => this.focus(id),
    });
    this.details = new Details({
      nameOf: (id) => this.nodes.get(id)?.name ?? null,
      open: (id) => (this.graph.has(id) ? this.select(id, true) : this.focus(id)),
      focus: (id) => this.focus(id),
      graphDown: (e) => this.showError(e),
      moreOf: (id) => this.sources.moreOf(id),
      hub: (id, name, dir) => this.hubs.open(id, name, dir),
      impact: (id) => this.impact.open(id),
    });
    this.landing = new Landing($('landing'), {
      focus: (id) => this.focus(id),
      browse: (ns, page, sort) => {
        this.state.ns = ns;
        this.state.page = page;
        this.state.sort = sort;
        this.push(true);
        this.sync();
      },
      failed: (e) => this.status.banner(e),
    });
    this.impact = new ImpactPanel($('impact'), { focus: (id) => this.focus(id), failed: (e) => this.showError(e) });
    this.hubs = new HubDialog($('hub-dialog') as HTMLDialogElement, {
      add: (id) => {
        if (this.state.x.includes(id) || id === this.state.node || id === this.centre()) return;
        this.state.x = [...this.state.x, id];
        this.revealNew = true;
        this.push(false);
        this.sync();
      },
      shown: (id) => this.graph.has(id),
      failed: (e) => this.showError(e),
    });
    this.setupTime();
    this.setupTheme();

    const cy = this.graph.cy;
    cy.on('tap', 'node', (ev) => {
      const id = ev.target.id() as string;
      this.select(id, true);
      this.expand(id);
    });
    cy.on('tap', (ev) => {
      if (ev.target === cy) this.select(null, true);
    });
    cy.on('tap', 'edge', (ev) => {
      const e = this.edges.get(ev.target.id() as string);
      if (e) this.details.edge(e);
    });
    $('cy').addEventListener('keydown', (ev) =>
      graphKey(ev, this.graph, {
        selected: () => this.state.sel,
        centre: () => this.centre(),
        select: (id) => this.select(id, true),
        expand: (id) => this.expand(id),
      }),
    );
    // Leaving the page closes its event streams at once: a page kept in the
    // back/forward cache would otherwise hold HTTP/1.1 connections to the
    // server (6 per host) that the next page's requests wait for.
    window.addEventListener('pagehide', () => this.sources.follow({ ...this.state, node: null }));
    window.addEventListener('pageshow', (ev) => {
      if (ev.persisted) this.sync();
    });
    window.addEventListener('popstate', () => {
      const prev = this.state;
      this.state = readURL();
      this.relayout = prev.node !== this.state.node || prev.ds !== this.state.ds;
      this.sync();
    });

    this.setupDepth();
    setupSearch({
      focus: (id, sel) => this.focus(id, sel),
      searched: (e) => {
        this.status.extra = e;
        if (e) this.status.banner(e);
        else this.updateStatus();
      },
    });
    // An empty explorer is a search box: type at once.
    if (!this.state.node) ($('search-input') as HTMLInputElement).focus();
    $('fit').addEventListener('click', () => this.graph.fit());
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

  /**
   * The id the view's centre is drawn with: state.node may be an exact id
   * (vertex:..., a search result), the drawn nodes keep their readable ids
   * unless two of one answer share one (exactIds).
   */
  private centre(): string | null {
    return this.sources.centreOf(this.state) ?? this.state.node;
  }

  /** Open the lineage of a node (search result, "focus" button). */
  private focus(id: string, sel = id): void {
    this.state = { ...this.state, node: id, up: 1, down: 1, sel, x: [] };
    this.relayout = true;
    this.push(true);
    this.sync();
  }

  private expand(id: string): void {
    const n = this.nodes.get(id);
    if (!n || !this.state.node) return;
    const m = this.sources.moreOf(id);
    if (m.up + m.down === 0) return;
    if (id === this.state.node || id === this.centre() || this.state.x.includes(id)) return;
    this.state.x = [...this.state.x, id];
    this.revealNew = true;
    this.push(false);
    this.sync();
  }

  private select(id: string | null, fromUser: boolean): void {
    this.state.sel = id;
    if (fromUser) this.push(false);
    this.graph.highlight(this.state.sel);
    this.list.classes();
    this.details.show(id);
  }

  /** Makes sources, controls and details follow this.state. */
  private sync(): void {
    const s = this.state;
    ($('up-val') as HTMLOutputElement).value = String(s.up);
    ($('down-val') as HTMLOutputElement).value = String(s.down);
    ($('ds-only') as HTMLInputElement).checked = s.ds;
    const mx = $('max-nodes') as HTMLInputElement;
    if (document.activeElement !== mx || Number(mx.value) !== s.max) mx.value = s.max ? String(s.max) : '';
    mx.disabled = !s.node;
    ($('up-dec') as HTMLButtonElement).disabled = !s.node || s.up <= 0;
    ($('down-dec') as HTMLButtonElement).disabled = !s.node || s.down <= 0;
    ($('up-inc') as HTMLButtonElement).disabled = !s.node || s.up >= MAX_DEPTH;
    ($('down-inc') as HTMLButtonElement).disabled = !s.node || s.down >= MAX_DEPTH;
    $('empty').hidden = true;
    this.landing.show(!s.node, s.ns, s.page, s.sort);
    ($('asof') as HTMLInputElement).value = s.asOf || '';
    ($('show-stale') as HTMLInputElement).checked = s.stale;
    setTime(s.asOf, s.stale);
    this.sources.follow(s);
    this.render();
    this.details.show(s.sel);
  }

  private setupTime(): void {
    const asof = $('asof') as HTMLInputElement;
    const apply = (): void => {
      this.state.asOf = /^\d{4}-\d{2}-\d{2}$/.test(asof.value) ? asof.value : null;
      this.state.stale = ($('show-stale') as HTMLInputElement).checked;
      this.push(false);
      this.sync();
      if (this.impact.openFor) this.impact.open(this.impact.openFor);
    };
    asof.addEventListener('change', apply);
    $('show-stale').addEventListener('change', apply);
    $('asof-now').addEventListener('click', () => {
      asof.value = '';
      apply();
    });
  }

  /** Dark mode follows the system; the button cycles system, dark, light (kept in localStorage). */
  private setupTheme(): void {
    const b = $('theme');
    const modes = ['', 'dark', 'light'];
    const set = (m: string): void => {
      if (m) document.documentElement.dataset.theme = m;
      else delete document.documentElement.dataset.theme;
      b.setAttribute('aria-label', 'Colour theme: ' + (m || 'follows the system'));
      b.title = b.getAttribute('aria-label') || '';
      this.graph.theme(m === 'dark' || (!m && matchMedia('(prefers-color-scheme: dark)').matches));
    };
    let cur = '';
    try {
      cur = localStorage.getItem('lf-theme') || '';
    } catch {
      /* no storage */
    }
    set(cur);
    matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => set(cur));
    b.addEventListener('click', () => {
      cur = modes[(modes.indexOf(cur) + 1) % modes.length];
      try {
        localStorage.setItem('lf-theme', cur);
      } catch {
        /* no storage */
      }
      set(cur);
    });
  }

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
    // The node cap per query (?max=): past it nodes say "N more".
    const mx = $('max-nodes') as HTMLInputElement;
    mx.addEventListener('change', () => {
      const n = Math.floor(Number(mx.value));
      const v = mx.value.trim() === '' || !Number.isFinite(n) || n <= 0 ? 0 : Math.min(5000, n);
      if (v === this.state.max) return;
      this.state.max = v;
      this.relayout = true;
      this.push(false);
      this.sync();
    });
    $('up-dec').addEventListener('click', step('up', -1));
    $('up-inc').addEventListener('click', step('up', 1));
    $('down-dec').addEventListener('click', step('down', -1));
    $('down-inc').addEventListener('click', step('down', 1));
  }

  // ------------------------------------------------------------ status

  private updateStatus(): void {
    this.status.update(this.sources.status());
  }

  private showError(e: ApiError): void {
    this.updateStatus();
    if (!this.sources.size) this.status.banner(e);
  }

  // ------------------------------------------------------------ render

  private queueRender(): void {
    // The view's first complete answer is drawn at once: waiting for the
    // next animation frame would first paint the empty page.
    if (!this.ready && !this.renderQueued && this.sources.allLoaded()) {
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

  /** Redraws the graph, the list, the status and the selected node's details from the sources' latest snapshots. */
  private render(): void {
    const t0 = performance.now();
    renderStarted(this.hooks, t0);
    const v = this.sources.merge(this.state.ds);
    const centre = this.centre();
    // A centre opened by its exact id (a search result): its selection
    // becomes the id the drawn node has.
    if (this.state.node?.startsWith('vertex:') && this.state.sel === this.state.node && centre && centre !== this.state.node) {
      this.state.sel = centre;
      this.push(false);
    }
    this.nodes = v.nodes;
    this.edges = v.visE;
    const wasDrawn = this.graph.cy.nodes().length > 0 && !this.relayout;
    const d = this.graph.draw(v, centre, this.relayout, this.revealNew);
    // Nodes that arrived with a live update are marked for a few seconds.
    if (wasDrawn && d.added.length) this.graph.markArrived(d.added, () => this.list.classes());
    if (d.added.length) this.revealNew = false;
    if (this.relayout && this.graph.cy.nodes().length && this.sources.allLoaded()) this.relayout = false;
    const t2 = performance.now();
    this.graph.highlight(this.state.sel);
    const t3 = performance.now();
    this.list.render(v.visN, v.visE, v.more, centre, this.state.x);
    const t4 = performance.now();
    this.updateStatus();
    $('nodecount').textContent = '(' + v.visN.size + (v.truncated ? ', truncated' : '') + ')';
    $('hidden-count').textContent = v.hidden
      ? v.hidden + (this.state.asOf ? ' edges hidden (not seen by then or stale)' : ' stale edges hidden')
      : '';
    const parts: Record<string, number> = { diff: d.diffAt - t0, layout: t2 - d.diffAt, highlight: t3 - t2, list: t4 - t3 };
    if (d.rankMs !== undefined) parts.rankBFS = d.rankMs;
    this.ready = this.sources.allLoaded() && this.graph.cy.nodes().length > 0;
    rendered(this.hooks, t0, parts, this.ready);
    // A new version of the centre may change the selected node's details.
    // A live change of the selected node (a run failed, its lastSeen or
    // "more" counts moved) reads its details again.
    const sel = this.state.sel;
    const n = sel ? v.visN.get(sel) : undefined;
    const m = sel ? v.more.get(sel) : undefined;
    const sig = n ? [n.id, n.lastRunState, n.hasFailedRuns, n.lastSeen, m?.up, m?.down].join('|') : '';
    if (sel && sel === this.details.shownFor && !d.added.length && sig === this.selSig) return;
    this.selSig = sig;
    if (sel && v.visN.has(sel)) this.details.show(sel, true);
  }
}

document.addEventListener('DOMContentLoaded', () => {
  new App();
});
