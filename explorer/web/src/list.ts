// The list of visible nodes (the keyboard and screen-reader way through
// the graph: select, expand, open) and the hidden list of visible edges.
import type { LEdge, LNode } from './api';
import { $, esc, kindName, later, parseItems } from './dom';
import type { GraphView } from './graph';
import { mark, marks } from './hooks';
import type { More } from './sources';

// Lists (visible nodes, edges) longer than LIST_SYNC_MAX rows get their first
// LIST_FIRST rows at once and the rest LIST_CHUNK rows per task (fillList).
const LIST_SYNC_MAX = 300;
const LIST_FIRST = 100;
const LIST_CHUNK = 200;

const COLLATOR = new Intl.Collator();

/** What the list's buttons do. */
export interface ListActions {
  select(id: string): void; // as a user's choice
  expand(id: string): void;
  focus(id: string): void;
}

export class NodeList {
  private gen = 0; // renders of the lists: a newer one cancels an older one's pending rows

  constructor(private readonly graph: GraphView, act: ListActions) {
    $('nodelist').addEventListener('click', (ev) => {
      const b = (ev.target as HTMLElement).closest('button');
      const li = (ev.target as HTMLElement).closest('li');
      if (!b || !li) return;
      const id = li.dataset.nodeId || '';
      const a = b.dataset.act;
      if (a === 'expand') act.expand(id);
      else if (a === 'focus') act.focus(id);
      else {
        act.select(id);
        this.graph.centreOn(id);
      }
    });
  }

  /** Shows the visible nodes (centre: the view's centre, expanded: the expanded nodes) and edges. */
  render(visN: Map<string, LNode>, visE: Map<string, LEdge>, more: Map<string, More>, centre: string | null, expanded: string[]): void {
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
      const sig = [n.name, n.type, m.up, m.down, n.hasFailedRuns, n.id === centre].join('|');
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
        (k > 0 && n.id !== centre && !expanded.includes(n.id)
          ? '<button type="button" class="xb" data-act="expand" aria-label="' + esc('Expand ' + n.name + ' (' + k + ' more)') + '">+' + k + '</button>'
          : '') +
        (n.id !== centre ? '<button type="button" class="xb" data-act="focus" aria-label="' + esc('Open the lineage of ' + n.name) + '">open</button>' : '') +
        '</li>');
      frag.push(null);
    }
    let j = 0;
    const rows: (HTMLElement | string)[] = frag.map((li) => li || html[j++]);
    this.gen++;
    this.fill(ul, rows, this.gen, true);

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
    this.fill(el2, items.map((li) => li || ehtml[k++]), this.gen, false);
  }

  /**
   * Puts rows (kept list items, or the HTML of new ones) into a list. A
   * long list (a big neighbourhood) gets its first LIST_FIRST rows at once
   * and the rest in idle tasks of LIST_CHUNK rows: parsing, styling and laying
   * out 1,000 rows of buttons in the same task and frame as the graph's
   * first draw delays the graph, and a user reads the first rows first.
   * Between the tasks the page answers input; a newer render (gen)
   * cancels the rest.
   */
  private fill(ul: HTMLElement, rows: (HTMLElement | string)[], gen: number, nodes: boolean): void {
    const mount = (from: number, to: number): HTMLElement[] => {
      const part = rows.slice(from, to);
      const made = parseItems(part.filter((r): r is string => typeof r === 'string'));
      let m = 0;
      return part.map((r) => (typeof r === 'string' ? made[m++] : r));
    };
    const first = rows.length > LIST_SYNC_MAX ? LIST_FIRST : rows.length;
    const head = mount(0, first);
    ul.replaceChildren(...head);
    if (nodes) this.classes(head);
    const next = (from: number): void => {
      if (gen !== this.gen || from >= rows.length) return;
      const t = performance.now();
      const part = mount(from, from + LIST_CHUNK);
      ul.append(...part);
      if (nodes) this.classes(part);
      marks.listChunks = (marks.listChunks || 0) + 1;
      marks.listChunkMs = (marks.listChunkMs || 0) + performance.now() - t;
      if (from + LIST_CHUNK >= rows.length) mark(nodes ? 'nodeListAt' : 'edgeListAt');
      later(() => next(from + LIST_CHUNK));
    };
    if (first < rows.length) later(() => next(first));
  }

  /** Gives the rows (default: all) the graph's selection classes (GraphView.highlight). */
  classes(lis?: HTMLElement[]): void {
    for (const li of lis || (Array.from($('nodelist').children) as HTMLElement[])) {
      const c = this.graph.classesOf(li.dataset.nodeId || '');
      li.classList.toggle('selected', c.sel);
      li.classList.toggle('upstream', c.up);
      li.classList.toggle('downstream', c.down);
      li.classList.toggle('arrived', c.arrived); // arrived live: "new" for a few seconds
      const b = li.querySelector('.nb');
      if (b) b.setAttribute('aria-pressed', String(c.sel));
    }
  }
}
