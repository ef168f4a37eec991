// The Impact tab: everything downstream (or upstream) of the selected node
// to a depth, as a list with type and namespace filters
// (/api/lf/v1/impact), and the whole list as CSV.
import { ApiError, exact, getJSON, timeQuery } from './api';
import type { NodeType } from './api';
import { el, kindName } from './dom';

interface ImpactNode {
  id: string;
  type: NodeType;
  namespace: string;
  name: string;
  distance: number;
  via: string;
}

interface ImpactAnswer {
  results: ImpactNode[];
  count: number;
  truncated: boolean;
  hiddenEdges: number;
}

export interface ImpactHost {
  focus(id: string): void;
  failed(e: ApiError): void;
}

export class ImpactPanel {
  private node: string | null = null;
  private abort: AbortController | null = null;
  private readonly dir: HTMLSelectElement;
  private readonly depth: HTMLInputElement;
  private readonly type: HTMLSelectElement;
  private readonly ns: HTMLInputElement;
  private readonly csv: HTMLAnchorElement;
  private readonly summary: HTMLElement;
  private readonly list: HTMLElement;
  private readonly title: HTMLElement;

  constructor(private readonly box: HTMLElement, private readonly host: ImpactHost) {
    this.title = el('h2', { id: 'impact-title' }, 'Impact');
    this.dir = el('select', { id: 'impact-dir', 'aria-label': 'Direction' }, el('option', { value: 'down' }, 'downstream'), el('option', { value: 'up' }, 'upstream'));
    this.depth = el('input', { id: 'impact-depth', type: 'number', min: '1', max: '20', value: '5', 'aria-label': 'Depth' });
    this.type = el('select', { id: 'impact-type', 'aria-label': 'Type' }, el('option', { value: '' }, 'datasets and jobs'), el('option', { value: 'DATASET' }, 'datasets'), el('option', { value: 'JOB' }, 'jobs'));
    this.ns = el('input', { id: 'impact-ns', type: 'search', placeholder: 'namespace', 'aria-label': 'Namespace' });
    this.csv = el('a', { id: 'impact-csv', class: 'button', download: 'impact.csv' }, 'Export CSV');
    const close = el('button', { type: 'button', id: 'impact-close', 'aria-label': 'Close the impact list' }, '×');
    close.addEventListener('click', () => this.open(null));
    this.summary = el('p', { id: 'impact-summary', class: 'hint', role: 'status' });
    this.list = el('table', { id: 'impact-list', 'aria-label': 'Impact' });
    for (const c of [this.dir, this.depth, this.type, this.ns]) c.addEventListener('change', () => this.load());
    box.replaceChildren(el('div', { class: 'impact-head' }, this.title, close),
      el('p', { class: 'impact-ctl' }, this.dir, ' depth ', this.depth, ' ', this.type, ' ', this.ns, ' ', this.csv),
      this.summary, this.list);
  }

  /** Opens the list of a node (null: closes it). */
  open(id: string | null): void {
    this.node = id;
    this.box.hidden = !id;
    if (!id) {
      if (this.abort) this.abort.abort();
      return;
    }
    this.load();
  }

  get openFor(): string | null {
    return this.node;
  }

  private query(format: string): string {
    const q = new URLSearchParams({ nodeId: exact(this.node as string), direction: this.dir.value, depth: this.depth.value || '5' });
    if (this.type.value) q.set('type', this.type.value);
    if (this.ns.value.trim()) q.set('namespace', this.ns.value.trim());
    if (format) q.set('format', format);
    const t = timeQuery();
    return '/api/lf/v1/impact?' + q.toString() + (t ? '&' + t : '');
  }

  private load(): void {
    if (!this.node) return;
    if (this.abort) this.abort.abort();
    const ab = new AbortController();
    this.abort = ab;
    this.title.textContent = 'Impact of ' + this.node.replace(/^(dataset|job):/, '');
    this.csv.href = this.query('csv');
    this.summary.textContent = 'Loading…';
    this.box.setAttribute('aria-busy', 'true');
    getJSON<ImpactAnswer>(this.query(''), ab.signal).then(
      (a) => {
        if (ab.signal.aborted) return;
        this.box.removeAttribute('aria-busy');
        this.summary.textContent = a.count + (a.truncated ? '+ (capped)' : '') + ' nodes ' + (this.dir.value === 'down' ? 'downstream' : 'upstream') +
          (a.hiddenEdges ? ' · ' + a.hiddenEdges + ' edges hidden by the time filter' : '');
        const tb = el('tbody', {});
        for (const n of a.results.slice(0, 2000)) {
          const b = el('button', { type: 'button', class: 'link' }, n.name);
          b.addEventListener('click', () => this.host.focus(n.id));
          tb.append(el('tr', { 'data-node-id': n.id, 'data-type': n.type },
            el('td', {}, String(n.distance)), el('td', {}, el('span', { class: 'kind ' + n.type }, kindName(n.type))), el('td', {}, b), el('td', { class: 'ns' }, n.namespace)));
        }
        this.list.replaceChildren(el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Hops'), el('th', { scope: 'col' }, 'Type'), el('th', { scope: 'col' }, 'Name'), el('th', { scope: 'col' }, 'Namespace'))), tb);
        if (a.results.length > 2000) this.summary.textContent += ' · the first 2,000 shown: export CSV for all';
      },
      (e) => {
        if (ab.signal.aborted || (e as Error).name === 'AbortError') return;
        this.box.removeAttribute('aria-busy');
        const err = e instanceof ApiError ? e : new ApiError(0, String(e));
        this.summary.textContent = 'Impact unavailable: ' + err.message;
        this.host.failed(err);
      },
    );
  }
}
