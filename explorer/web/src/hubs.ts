// The hidden neighbours of a node past the view's per-level cap ("N more"):
// a paged, searchable list (/api/lf/v1/neighbors) from which any can be
// added to the view.
import { ApiError, exact, getJSON, timeQuery } from './api';
import type { SearchResult } from './api';
import { el, kindName } from './dom';

const PAGE = 25;

interface NeighborPage {
  total: number;
  capped: boolean;
  offset: number;
  results: SearchResult[];
}

export interface HubHost {
  add(id: string): void; // add a neighbour to the view
  shown(id: string): boolean; // the node is in the view
  failed(e: ApiError): void;
}

export class HubDialog {
  private node = '';
  private dir = 'down';
  private page = 0;
  private abort: AbortController | null = null;
  private readonly q: HTMLInputElement;
  private readonly list: HTMLElement;
  private readonly info: HTMLElement;
  private readonly title: HTMLElement;
  private readonly prev: HTMLButtonElement;
  private readonly next: HTMLButtonElement;
  private timer: number | undefined;

  constructor(private readonly dlg: HTMLDialogElement, private readonly host: HubHost) {
    this.title = el('h2', { id: 'hub-title' });
    this.q = el('input', { id: 'hub-q', type: 'search', placeholder: 'Filter by name', 'aria-label': 'Filter the neighbours by name' });
    this.q.addEventListener('input', () => {
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(() => {
        this.page = 0;
        this.load();
      }, 150);
    });
    this.list = el('ul', { id: 'hub-list', class: 'rows' });
    this.info = el('span', { id: 'hub-info', class: 'hint', role: 'status' });
    this.prev = el('button', { type: 'button', id: 'hub-prev' }, '‹');
    this.next = el('button', { type: 'button', id: 'hub-next' }, '›');
    this.prev.addEventListener('click', () => {
      this.page--;
      this.load();
    });
    this.next.addEventListener('click', () => {
      this.page++;
      this.load();
    });
    const close = el('button', { type: 'button', id: 'hub-close' }, 'Close');
    close.addEventListener('click', () => dlg.close());
    dlg.replaceChildren(this.title, this.q, el('p', { class: 'pager' }, this.prev, ' ', this.info, ' ', this.next), this.list, el('p', {}, close));
  }

  /** Opens the neighbours of node id in direction dir. */
  open(id: string, name: string, dir: 'up' | 'down'): void {
    this.node = id;
    this.dir = dir;
    this.page = 0;
    this.q.value = '';
    this.title.textContent = (dir === 'up' ? 'Upstream of ' : 'Downstream of ') + name;
    if (!this.dlg.open) this.dlg.show(); // not modal: the view stays usable behind it
    this.q.focus();
    this.load();
  }

  private load(): void {
    if (this.abort) this.abort.abort();
    const ab = new AbortController();
    this.abort = ab;
    const q = new URLSearchParams({ nodeId: exact(this.node), direction: this.dir, limit: String(PAGE), offset: String(this.page * PAGE) });
    if (this.q.value.trim()) q.set('q', this.q.value.trim());
    const t = timeQuery();
    getJSON<NeighborPage>('/api/lf/v1/neighbors?' + q.toString() + (t ? '&' + t : ''), ab.signal).then(
      (p) => {
        if (ab.signal.aborted) return;
        const pages = Math.max(1, Math.ceil(p.total / PAGE));
        this.info.textContent = p.total + (p.capped ? '+' : '') + ' neighbours · page ' + (this.page + 1) + ' of ' + pages;
        this.prev.disabled = this.page <= 0;
        this.next.disabled = this.page + 1 >= pages;
        this.list.replaceChildren(...p.results.map((r) => {
          const inView = this.host.shown(r.id);
          const b = el('button', { type: 'button', class: 'link', 'data-act': 'add' }, inView ? 'in view' : 'Add');
          (b as HTMLButtonElement).disabled = inView;
          b.addEventListener('click', () => {
            this.host.add(r.id);
            b.textContent = 'added';
            (b as HTMLButtonElement).disabled = true;
          });
          return el('li', { 'data-node-id': r.id }, el('span', { class: 'kind ' + r.type }, kindName(r.type)), ' ', el('span', { class: 'nm' }, r.name), ' ', b);
        }));
      },
      (e) => {
        if (ab.signal.aborted || (e as Error).name === 'AbortError') return;
        const err = e instanceof ApiError ? e : new ApiError(0, String(e));
        this.info.textContent = 'Unavailable: ' + err.message;
        this.host.failed(err);
      },
    );
  }
}
