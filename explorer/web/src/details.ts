// The details panel of the selected node: its properties, aliases, schema
// and last runs; for a dataset also the jobs writing it (with their newest
// failed run) and its column lineage.
import { ApiError, fetchColumnLineage, fetchFieldLineage, fetchNode } from './api';
import type { LEdge, NodeDetails } from './api';
import { $, el, fmtDuration, fmtTime, kindName, shorten } from './dom';

// A dataset's details list at most this many producing jobs.
const MAX_PRODUCERS = 10;

/** What the details panel needs from the app. */
export interface DetailsHost {
  nameOf(id: string): string | null; // the name of a node of the view, null when not in it
  open(id: string): void; // a producing job chosen: select it when drawn, else focus it
  focus(id: string): void;
  graphDown(e: ApiError): void;
  moreOf(id: string): { up: number; down: number }; // neighbours the view leaves out
  hub(id: string, name: string, dir: 'up' | 'down'): void; // open the hidden neighbours
  impact(id: string): void; // open the Impact tab
}

export class Details {
  private abort: AbortController | null = null;
  private shown: string | null = null;

  constructor(private readonly host: DetailsHost) {}

  /** The node whose details are shown (or loading). */
  get shownFor(): string | null {
    return this.shown;
  }

  /** Shows the details of node id (none: a hint); refresh reads them again when already shown. */
  show(id: string | null, refresh = false): void {
    const box = $('details');
    if (!id) {
      this.shown = null;
      if (this.abort) this.abort.abort();
      box.replaceChildren(el('p', { class: 'hint' }, 'Select a node to see its details.'));
      return;
    }
    if (id === this.shown && !refresh) return;
    if (this.abort) this.abort.abort();
    const ab = new AbortController();
    this.abort = ab;
    if (id !== this.shown) {
      box.setAttribute('aria-busy', 'true');
      box.replaceChildren(el('p', { class: 'hint' }, 'Loading details…'));
    }
    this.shown = id;
    fetchNode(id, ab.signal).then(
      (got) => {
        if (ab.signal.aborted) return;
        // Asked by exact id (vertex:...): keep it for the buttons, the
        // readable id of the answer may name another node.
        const d = id.startsWith('vertex:') ? { ...got, id } : got;
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
        if (err.graphDown) this.host.graphDown(err);
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
      const name = this.host.nameOf(id) ?? id.replace(/^job:/, '');
      const b = el('button', { type: 'button', class: 'link', 'data-act': 'select' }, name);
      b.addEventListener('click', () => this.host.open(id));
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

  /** Shows a lineage edge: its ends, first and last seen, last run. */
  edge(e: LEdge): void {
    if (this.abort) this.abort.abort();
    this.shown = null;
    const box = $('details');
    const end = (id: string): HTMLElement => {
      const b = el('button', { type: 'button', class: 'link' }, this.host.nameOf(id) ?? id);
      b.addEventListener('click', () => this.host.open(id));
      return b;
    };
    const dl = el('dl', { id: 'edge-details' });
    const row = (k: string, v: Node | string): void => {
      dl.append(el('dt', {}, k), el('dd', {}, v));
    };
    row('From', end(e.origin));
    row('To', end(e.destination));
    row('First seen', fmtTime(e.firstSeen));
    row('Last seen', fmtTime(e.lastSeen));
    row('Last run id', e.lastRunId || '—');
    box.replaceChildren(el('div', {}, el('span', { class: 'kind' }, 'Edge'), ' ', e.type), el('h2', { id: 'details-title' }, (this.host.nameOf(e.origin) ?? e.origin) + ' → ' + (this.host.nameOf(e.destination) ?? e.destination)), dl);
  }

  /**
   * Shows a field's column lineage two levels up and down
   * (/api/lf/v1/column-lineage of the field): each hop with the
   * transformation of that input; any field in it opens its own view.
   */
  fieldView(d: { id: string; namespace: string; name: string }, field: string): void {
    const box = $('details');
    const fid = 'datasetField:' + d.namespace + ':' + d.name + ':' + field;
    let sec = document.getElementById('field-view');
    if (!sec) {
      sec = el('section', { id: 'field-view', 'aria-label': 'Field lineage', class: 'field-view' });
      box.prepend(sec);
    }
    const view = sec;
    view.dataset.field = fid;
    view.replaceChildren(el('h3', {}, 'Field ' + d.name + '.' + field), el('p', { class: 'hint' }, 'Loading…'));
    view.scrollIntoView({ block: 'nearest' });
    fetchFieldLineage(fid, 2).then(
      (cl) => {
        if (view.dataset.field !== fid) return;
        const fields = new Map(cl.fields.map((f) => [f.id, f]));
        const rows = (dir: 'up' | 'down'): HTMLElement[] => {
          const out: HTMLElement[] = [];
          let frontier = [fid];
          const seen = new Set(frontier);
          for (let hop = 1; hop <= 2 && frontier.length; hop++) {
            const next: string[] = [];
            for (const e of cl.edges) {
              const from = dir === 'up' ? e.destination : e.origin;
              const to = dir === 'up' ? e.origin : e.destination;
              if (!frontier.includes(from) || seen.has(to)) continue;
              seen.add(to);
              next.push(to);
              const f = fields.get(to);
              const via = fields.get(from);
              if (!f) continue;
              const b = el('button', { type: 'button', class: 'link', 'data-field-id': f.id, title: f.namespace }, f.dataset + '.' + f.field);
              b.addEventListener('click', () => this.fieldView({ id: 'dataset:' + f.namespace + ':' + f.dataset, namespace: f.namespace, name: f.dataset }, f.field));
              out.push(el('tr', { 'data-hop': String(hop), 'data-dir': dir },
                el('td', {}, String(hop)), el('td', {}, b),
                el('td', { class: 'hint' }, via ? via.dataset + '.' + via.field : ''),
                el('td', { title: e.transformationDescription || '' }, e.transformationType || '—')));
            }
            frontier = next;
          }
          return out;
        };
        const table = (title: string, rs: HTMLElement[], id: string): HTMLElement[] =>
          [el('h3', {}, title), rs.length
            ? el('table', { id, 'aria-label': title }, el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Hop'), el('th', { scope: 'col' }, 'Field'), el('th', { scope: 'col' }, 'Through'), el('th', { scope: 'col' }, 'Transformation'))), el('tbody', {}, ...rs))
            : el('p', { class: 'hint' }, 'None recorded.')];
        const close = el('button', { type: 'button', class: 'link', id: 'field-close' }, 'Close field view');
        close.addEventListener('click', () => view.remove());
        view.replaceChildren(el('h3', { id: 'field-title' }, 'Field ' + d.name + '.' + field),
          ...table('Comes from', rows('up'), 'field-up'), ...table('Used by', rows('down'), 'field-down'), close);
      },
      (e) => {
        if (view.dataset.field !== fid) return;
        view.replaceChildren(el('p', { class: 'hint', role: 'alert' }, 'Field lineage unavailable: ' + (e as Error).message));
      },
    );
  }

  /** Adds the dataset's column lineage (each field and the fields it comes from), if the graph has any. */
  private columnLineage(d: NodeDetails, box: HTMLElement, signal: AbortSignal): void {
    fetchColumnLineage(d.id, signal).then(
      (cl) => {
        if (signal.aborted) return;
        const fields = new Map(cl.fields.map((f) => [f.id, f]));
        const rows: HTMLElement[] = [];
        for (const e of cl.edges) {
          const x = fields.get(e.destination);
          const i = fields.get(e.origin);
          if (!x || !i || x.namespace !== d.namespace || x.dataset !== d.name) continue;
          const from = el('button', { type: 'button', class: 'link', title: i.namespace }, i.dataset + '.' + i.field);
          from.addEventListener('click', () => this.fieldView({ id: 'dataset:' + i.namespace + ':' + i.dataset, namespace: i.namespace, name: i.dataset }, i.field));
          const to = el('button', { type: 'button', class: 'link field-link', 'data-field': x.field }, x.field);
          to.addEventListener('click', () => this.fieldView(d, x.field));
          rows.push(el('tr', { 'data-field': x.field },
            el('td', {}, to),
            el('td', {}, from),
            el('td', { title: e.transformationDescription || '' }, e.transformationType || '')));
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
    focusBtn.addEventListener('click', () => this.host.focus(d.id));
    const impactBtn = el('button', { type: 'button', class: 'link', 'data-act': 'impact' }, 'Impact…');
    impactBtn.addEventListener('click', () => this.host.impact(d.id));
    const p = el('p', {}, focusBtn, impactBtn);
    const m = this.host.moreOf(d.id);
    for (const dir of ['up', 'down'] as const) {
      if (!m[dir]) continue;
      const b = el('button', { type: 'button', class: 'link', 'data-act': 'more-' + dir }, m[dir] + ' more ' + (dir === 'up' ? 'upstream' : 'downstream') + '…');
      b.addEventListener('click', () => this.host.hub(d.id, d.name, dir));
      p.append(b);
    }
    out.push(p);

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
        const fname = String(f.name ?? '');
        const fb = el('button', { type: 'button', class: 'link field-link', 'data-field': fname, title: 'Column lineage of ' + fname }, fname);
        fb.addEventListener('click', () => this.fieldView(d, fname));
        tb.append(el('tr', {}, el('td', {}, d.type === 'DATASET' ? fb : fname), el('td', {}, String(f.type ?? '')), el('td', {}, String(f.description ?? ''))));
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
            el('td', { title: r.runId }, shorten(r.runId, 14), r.errorMessage ? errorView(r.errorMessage) : null)));
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
        let txt = typeof v === 'string' ? v : JSON.stringify(v);
        if (/At$/.test(k) && typeof v === 'number') txt = fmtTime(v); // epoch ms as an ISO time
        const parsed = typeof v === 'string' && /^[[{]/.test(v) ? parseJSON(v) : null;
        pdl.append(el('dt', {}, k), el('dd', {}, parsed && typeof parsed === 'object' ? facetView(parsed) : txt.length > 200 ? el('pre', {}, txt) : txt));
      }
      out.push(pdl);
    }
    return out;
  }
}

/** An error message: its start, the whole text behind a keyboard-reachable expander. */
function errorView(msg: string): HTMLElement {
  if (msg.length <= 160) return el('div', { class: 'error-message' }, msg);
  return el('details', { class: 'error-message' }, el('summary', {}, msg.slice(0, 160) + '…'), el('div', { class: 'error-full' }, msg));
}

/** A facet rendered as key: value rows, with the raw JSON on demand. */
function facetView(v: object): HTMLElement {
  const box = el('div', { class: 'facet' });
  if (!Array.isArray(v)) {
    const dl = el('dl', {});
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (k.startsWith('_')) continue;
      dl.append(el('dt', {}, k), el('dd', {}, typeof x === 'object' && x !== null ? JSON.stringify(x) : String(x)));
    }
    box.append(dl);
  }
  box.append(el('details', {}, el('summary', {}, 'raw JSON'), el('pre', {}, JSON.stringify(v, null, 2))));
  return box;
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

