// The landing page (no node in the URL): namespaces with counts, the jobs
// of the latest failed runs, the latest changed nodes; and one namespace
// browsed in pages (?ns=&page=&sort=). A way in without knowing a name.
import { ApiError, getJSON } from './api';
import type { NodeType, SearchResult } from './api';
import { el, fmtTime, kindName, shorten } from './dom';
import { mark } from './hooks';

const PAGE = 50;

interface NamespaceCount {
  name: string;
  datasets: number;
  jobs: number;
}

interface LandingData {
  namespaces: NamespaceCount[];
  recentlyFailed: { id: string; namespace: string; name: string; runId: string; at: number | null; errorMessage: string | null }[];
  recentlyChanged: { id: string; type: NodeType; namespace: string; name: string; lastSeen: number }[];
  readAt: number; // 0: the lists are not read yet
}

interface BrowsePage {
  namespace: string;
  total: number;
  offset: number;
  results: SearchResult[];
}

/** What the landing page needs from the app. */
export interface LandingHost {
  focus(id: string): void; // open a node's lineage
  browse(ns: string | null, page: number, sort: string): void; // change the browsed namespace (URL)
  failed(e: ApiError): void;
}

export class Landing {
  private abort: AbortController | null = null;
  private key = '';

  constructor(private readonly box: HTMLElement, private readonly host: LandingHost) {}

  /** Shows the landing page (ns null) or a namespace's page; hides it when show is false. */
  show(show: boolean, ns: string | null, page: number, sort: string): void {
    this.box.hidden = !show;
    if (!show) {
      this.key = '';
      if (this.abort) this.abort.abort();
      return;
    }
    const key = [ns, page, sort].join('\u0000');
    if (key === this.key) return;
    this.key = key;
    if (this.abort) this.abort.abort();
    const ab = new AbortController();
    this.abort = ab;
    this.box.setAttribute('aria-busy', 'true');
    const done = (): void => this.box.removeAttribute('aria-busy');
    const fail = (e: unknown): void => {
      if (ab.signal.aborted || (e as Error).name === 'AbortError') return;
      done();
      this.key = '';
      this.host.failed(e instanceof ApiError ? e : new ApiError(0, String(e)));
    };
    if (ns === null) {
      getJSON<LandingData>('/api/lf/v1/landing', ab.signal).then((d) => {
        if (ab.signal.aborted) return;
        done();
        this.box.replaceChildren(...this.landing(d));
        mark('landingAt');
        // The server reads the lists in the background: ask again until it has.
        if (!d.readAt) window.setTimeout(() => {
          if (this.key === key && !ab.signal.aborted) {
            this.key = '';
            this.show(true, ns, page, sort);
          }
        }, 3000);
      }, fail);
      return;
    }
    const q = new URLSearchParams({ namespace: ns, limit: String(PAGE), offset: String(page * PAGE), sort });
    getJSON<BrowsePage>('/api/lf/v1/browse?' + q.toString(), ab.signal).then((p) => {
      if (ab.signal.aborted) return;
      done();
      this.box.replaceChildren(...this.namespace(p, page, sort));
    }, fail);
  }

  private nodeButton(id: string, type: NodeType, name: string, ns?: string): HTMLElement {
    const b = el('button', { type: 'button', class: 'link node-link', 'data-node-id': id, title: (ns ? ns + ' / ' : '') + name },
      el('span', { class: 'kind ' + type }, kindName(type)), ' ', el('span', { class: 'nm' }, name));
    b.addEventListener('click', () => this.host.focus(id));
    return b;
  }

  private landing(d: LandingData): Node[] {
    const nsList = el('ul', { id: 'landing-namespaces', class: 'cards' });
    for (const n of d.namespaces) {
      const b = el('button', { type: 'button', class: 'card', 'data-ns': n.name },
        el('strong', { class: 'nm' }, n.name), el('span', { class: 'hint' }, n.datasets + ' datasets · ' + n.jobs + ' jobs'));
      b.addEventListener('click', () => this.host.browse(n.name, 0, 'name'));
      nsList.append(el('li', {}, b));
    }
    const failed = el('ul', { id: 'landing-failed', class: 'rows' });
    for (const f of d.recentlyFailed) {
      failed.append(el('li', { 'data-node-id': f.id }, this.nodeButton(f.id, 'JOB', f.name, f.namespace),
        el('span', { class: 'hint' }, ' ' + f.namespace + ' · ' + fmtTime(f.at)),
        f.errorMessage ? el('div', { class: 'error-message', title: f.errorMessage }, shorten(f.errorMessage, 200)) : null));
    }
    if (!d.recentlyFailed.length) failed.append(el('li', { class: 'hint' }, d.readAt ? 'No failed run recorded.' : 'Reading recent runs…'));
    const changed = el('ul', { id: 'landing-changed', class: 'rows' });
    for (const c of d.recentlyChanged) {
      changed.append(el('li', { 'data-node-id': c.id }, this.nodeButton(c.id, c.type, c.name, c.namespace),
        el('span', { class: 'hint' }, ' ' + c.namespace + ' · ' + fmtTime(c.lastSeen))));
    }
    if (!d.recentlyChanged.length) changed.append(el('li', { class: 'hint' }, d.readAt ? 'No lineage yet.' : 'Reading recent changes…'));
    return [
      el('h2', {}, 'Namespaces'), nsList,
      el('div', { class: 'cols' },
        el('section', { 'aria-labelledby': 'lf-h' }, el('h2', { id: 'lf-h' }, 'Recently failed jobs'), failed),
        el('section', { 'aria-labelledby': 'lc-h' }, el('h2', { id: 'lc-h' }, 'Recently changed'), changed)),
    ];
  }

  private namespace(p: BrowsePage, page: number, sort: string): Node[] {
    const back = el('button', { type: 'button', class: 'link', id: 'landing-back' }, '← All namespaces');
    back.addEventListener('click', () => this.host.browse(null, 0, 'name'));
    const sel = el('select', { id: 'browse-sort', 'aria-label': 'Sort' },
      ...[['name', 'Name A–Z'], ['-name', 'Name Z–A'], ['type', 'Datasets, then jobs']].map(([v, t]) => {
        const o = el('option', { value: v }, t);
        if (v === sort) o.setAttribute('selected', '');
        return o;
      }));
    sel.addEventListener('change', () => this.host.browse(p.namespace, 0, (sel as HTMLSelectElement).value));
    const pages = Math.max(1, Math.ceil(p.total / PAGE));
    const prev = el('button', { type: 'button', id: 'browse-prev' }, '‹ Previous');
    const next = el('button', { type: 'button', id: 'browse-next' }, 'Next ›');
    (prev as HTMLButtonElement).disabled = page <= 0;
    (next as HTMLButtonElement).disabled = page + 1 >= pages;
    prev.addEventListener('click', () => this.host.browse(p.namespace, page - 1, sort));
    next.addEventListener('click', () => this.host.browse(p.namespace, page + 1, sort));
    const ul = el('ul', { id: 'browse-list', class: 'rows' });
    for (const r of p.results) ul.append(el('li', { 'data-node-id': r.id }, this.nodeButton(r.id, r.type, r.name)));
    return [
      back,
      el('h2', { id: 'browse-title' }, p.namespace),
      el('p', { class: 'pager' }, sel, ' ', prev, el('span', { id: 'browse-page' }, ' page ' + (page + 1) + ' of ' + pages + ' (' + p.total + ') '), next),
      ul,
    ];
  }
}
