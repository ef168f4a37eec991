// The search box: a combobox of datasets and jobs by name or alias
// (/api/lf/v1/search), driven by mouse or keyboard.
import { ApiError, remember, search } from './api';
import type { SearchResult } from './api';
import { $, el, kindName } from './dom';

/** What the search box needs from the app. */
export interface SearchHost {
  focus(id: string, sel?: string): void; // a result chosen: its exact id, its readable one
  searched(err: ApiError | null): void; // a search answered (null) or failed
}

/** Wires the search box and its result list. */
export function setupSearch(host: SearchHost): void {
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
    // Opened by its exact id: the readable one may name another node (a
    // decoy); the drawn node keeps the readable id, which now stands for it.
    if (r.ref) remember(r.id, r.ref);
    host.focus(r.ref || r.id, r.id);
  };
  const show = (): void => {
    list.replaceChildren(
      ...results.map((r, i) => {
        const li = el('li', { id: 'sr-' + i, role: 'option', 'aria-selected': 'false', 'data-node-id': r.id, 'data-ref': r.ref || '' },
          el('span', { class: 'kind ' + r.type }, kindName(r.type)),
          el('span', { class: 'nm', title: r.name }, r.name),
          el('span', { class: 'ns', title: r.namespace }, r.namespace + (r.matchedAlias ? ' · alias ' + r.matchedAlias.name : '')),
          el('span', { class: 'matched' }, matchedLabel(r)));
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
    // The first result is pre-highlighted (Enter takes it); the first
    // ArrowDown selects it rather than skipping to the second.
    active = -1;
    mark();
    list.classList.toggle('pre', results.length > 0);
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
        host.searched(null);
        show();
      },
      (e) => {
        if (mine.signal.aborted || (e as Error).name === 'AbortError') return;
        host.searched(e instanceof ApiError ? e : new ApiError(0, String(e)));
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
      list.classList.remove('pre');
      mark();
      ev.preventDefault();
    } else if (ev.key === 'Enter') {
      if (!list.hidden && results.length) choose(active >= 0 ? active : 0);
      ev.preventDefault();
    } else if (ev.key === 'Escape') {
      close();
    }
  });
  input.addEventListener('blur', () => window.setTimeout(close, 100));
}

/** Says what a result matched when it was not a part of its name. */
function matchedLabel(r: SearchResult): string {
  switch (r.matched) {
    case 'uri':
      return 'full URI';
    case 'namespace':
      return 'namespace';
    case 'glueTable':
      return 'db.table';
    case 'alias':
      return 'alias';
  }
  return '';
}
