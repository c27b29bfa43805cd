// The support console's browser script, bundled by build.ts into the file src/admin/routes.ts
// serves (src/admin/console-bundle.ts). Everything it shows comes from merchants and receivers, so
// it only ever reaches the page as text: textContent, append(string) and attribute values, never
// markup (dom.ts builds it so).
import { TRPCClientError } from '@trpc/client';
import { client, TOKEN_KEY, type Delivery, type DeliveryDetail, type DeliveryStatuses, type Endpoint, type EventType, type Outputs, type TaxDocument } from './api.js';
import { byId, facts, h, instant, localValue, merchantName, option, shortId, when } from './dom.js';

const PAGE_SIZE = 50;
const POLL_MS = 2000;

const ui = {
  notice: byId('notice', HTMLElement),
  problem: byId('problem', HTMLElement),
  signOut: byId('sign-out', HTMLButtonElement),
  login: byId('login', HTMLElement),
  loginForm: byId('login-form', HTMLFormElement),
  token: byId('token', HTMLInputElement),
  main: byId('console', HTMLElement),
  filters: byId('filters', HTMLFormElement),
  merchant: byId('f-merchant', HTMLSelectElement),
  endpoint: byId('f-endpoint', HTMLSelectElement),
  status: byId('f-status', HTMLSelectElement),
  eventType: byId('f-type', HTMLSelectElement),
  from: byId('f-from', HTMLInputElement),
  to: byId('f-to', HTMLInputElement),
  rows: byId('delivery-rows', HTMLTableSectionElement),
  more: byId('more', HTMLButtonElement),
  endpointPanel: byId('endpoint', HTMLElement),
  endpointFacts: byId('endpoint-facts', HTMLDListElement),
  toggle: byId('endpoint-toggle', HTMLButtonElement),
  replayFailedForm: byId('replay-failed-form', HTMLFormElement),
  replaySince: byId('replay-since', HTMLInputElement),
  deliveryPanel: byId('delivery', HTMLElement),
  deliveryFacts: byId('delivery-facts', HTMLDListElement),
  replay: byId('replay', HTMLButtonElement),
  attemptRows: byId('attempt-rows', HTMLTableSectionElement),
  payload: byId('payload', HTMLPreElement),
  dtePanel: byId('dte-documents', HTMLElement),
  dteMerchant: byId('dte-merchant', HTMLElement),
  dteRows: byId('dte-rows', HTMLTableSectionElement),
};

let cursor: string | null = null;
let searches = 0; // searches begun, so that only the latest one shows its rows
let complaints = 0; // errors shown, so that an action clears only those shown before it began
let openId: string | null = null;
let shownEndpoint: Endpoint | null = null;
let poll: ReturnType<typeof setTimeout> | undefined;
const endpoints = new Map<string, Endpoint>();
const merchantNames = new Map<string, string>();

function say(message: string): void {
  ui.notice.textContent = message;
  ui.problem.textContent = '';
}

function showLogin(message = ''): void {
  clearTimeout(poll);
  ui.main.hidden = true;
  ui.signOut.hidden = true;
  ui.login.hidden = false;
  ui.notice.textContent = '';
  ui.problem.textContent = message;
  ui.token.value = '';
  ui.token.focus();
}

function complain(err: unknown): void {
  complaints += 1;
  if (err instanceof TRPCClientError && (err.data as { code?: string } | undefined)?.code === 'UNAUTHORIZED') {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin('The admin token was refused. Sign in again.');
    return;
  }
  ui.problem.textContent = err instanceof Error ? err.message : String(err);
}

/**
 * Runs one action; its button stays disabled meanwhile so a double click does not do it twice.
 * Once an action succeeds, an error shown before it began (a refused token, a refused replay) is
 * stale; one shown meanwhile, by another action, is not.
 */
async function act(task: () => Promise<void>, button?: HTMLButtonElement): Promise<void> {
  const shown = complaints;
  if (button) button.disabled = true;
  try {
    await task();
    if (complaints === shown) ui.problem.textContent = '';
  } catch (err) {
    complain(err);
  } finally {
    if (button) button.disabled = false;
  }
}

// ─── Filters and the list ────────────────────────────────────────────────────

async function loadEndpointOptions(): Promise<void> {
  const merchantId = ui.merchant.value || undefined;
  const selected = ui.endpoint.value;
  const page = await client.endpoints.list.query({ merchant_id: merchantId, limit: 200 });
  // Another merchant was picked meanwhile (or at sign-in, before this list came): its load shows its own.
  if ((ui.merchant.value || undefined) !== merchantId) return;
  endpoints.clear();
  const options = [option('', 'All endpoints')];
  for (const e of page.data) {
    endpoints.set(e.id, e);
    const label = `${merchantId ? '' : `${e.merchant_name} — `}${e.url}${e.enabled ? '' : ' (disabled)'}`;
    options.push(option(e.id, label));
  }
  ui.endpoint.replaceChildren(...options);
  if (endpoints.has(selected)) ui.endpoint.value = selected;
}

function deliveryRow(d: Delivery): HTMLTableRowElement {
  return h(
    'tr',
    { 'data-id': d.id },
    h('td', {}, deliveryLink(d.id, shortId(d.id))),
    h('td', {}, when(d.created_at)),
    h('td', {}, merchantName(d.merchant_name, d.merchant_id)),
    h('td', {}, d.endpoint_url),
    h('td', {}, d.event_type),
    h('td', {}, h('span', { class: `status status-${d.status}` }, d.status)),
    h('td', {}, `${d.attempts}/${d.max_attempts}`),
    h('td', { class: 'error', title: d.last_error_category ?? '' }, d.last_error ?? ''),
  );
}

async function search(append = false): Promise<void> {
  const mine = ++searches;
  const page = await client.deliveries.list.query({
    merchant_id: ui.merchant.value || undefined,
    endpoint_id: ui.endpoint.value || undefined,
    // An option's value is one status or several, comma-separated ("not delivered").
    status: (ui.status.value ? ui.status.value.split(',') : undefined) as DeliveryStatuses | undefined,
    event_type: (ui.eventType.value || undefined) as EventType,
    from: instant(ui.from.value),
    to: instant(ui.to.value),
    limit: PAGE_SIZE,
    cursor: append && cursor ? cursor : undefined,
  });
  // Only the latest search shows: an earlier one answering late (sign-in's, say) would bring back rows the filters exclude.
  if (mine !== searches) return;
  const rows = page.data.map(deliveryRow);
  if (append) ui.rows.append(...rows);
  else ui.rows.replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: '8' }, 'No deliveries match.'))]));
  cursor = page.next_cursor;
  ui.more.hidden = cursor === null;
}

// ─── One endpoint ────────────────────────────────────────────────────────────

function showEndpoint(e: Endpoint): void {
  shownEndpoint = e;
  ui.endpointPanel.hidden = false;
  facts(ui.endpointFacts, [
    ['URL', e.url],
    ['Endpoint', e.id],
    ['Merchant', merchantName(e.merchant_name, e.merchant_id)],
    ['State', e.enabled ? 'enabled' : `disabled${e.disabled_reason ? ` (${e.disabled_reason})` : ''}`],
    ['Disabled at', when(e.disabled_at)],
    ['Consecutive failures', String(e.consecutive_failures)],
    ['Failing since', when(e.failing_since)],
    ['Sandbox', e.is_sandbox ? 'yes' : 'no'],
  ]);
  ui.toggle.textContent = e.enabled ? 'Disable endpoint' : 'Enable endpoint';
  if (!ui.replaySince.value) ui.replaySince.value = localValue(new Date(Date.now() - 24 * 3600 * 1000));
}

// ─── One delivery ────────────────────────────────────────────────────────────

function deliveryLink(id: string, text: string): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'link', title: id }, text);
  b.addEventListener('click', () => void act(() => openDelivery(id)));
  return b;
}

function attemptRow(a: DeliveryDetail['attempt_log'][number]): HTMLTableRowElement {
  const headers = Object.entries(a.request_headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  return h(
    'tr',
    {},
    h('td', {}, String(a.attempt_number)),
    h('td', {}, when(a.started_at)),
    h('td', {}, a.response_status === null ? '—' : String(a.response_status)),
    h('td', {}, `${a.duration_ms} ms`),
    h('td', { class: 'error', title: a.error_category ?? '' }, a.error ?? ''),
    h('td', {}, h('pre', { class: 'excerpt' }, a.response_body ?? '')),
    h('td', {}, h('details', {}, h('summary', {}, 'headers'), h('pre', {}, headers))),
  );
}

function showDelivery(d: DeliveryDetail): void {
  ui.deliveryPanel.hidden = false;
  const replays = d.replays.length ? h('span', {}, ...d.replays.map((r) => deliveryLink(r.id, `${shortId(r.id)} (${r.status})`))) : null;
  facts(ui.deliveryFacts, [
    ['Delivery', d.id],
    ['Merchant', merchantName(d.merchant_name, d.merchant_id)],
    ['Endpoint', d.endpoint_url],
    ['Event', `${d.event_type} · ${d.event_id}`],
    ['Status', h('span', { class: `status status-${d.status}` }, d.status)],
    ['Attempts', `${d.attempts} of ${d.max_attempts}`],
    ['Next retry', when(d.next_retry_at)],
    ['Last response', d.last_response_status === null ? '—' : String(d.last_response_status)],
    ['Last error', d.last_error ?? '—'],
    // What the merchant is told of that error (the API never shows the raw text above).
    ['Error category', d.last_error_category ?? '—'],
    ['Created', when(d.created_at)],
    ['Completed', when(d.completed_at)],
    ['Test', d.is_test ? 'yes' : 'no'],
    ['Replay of', d.replay_of ? deliveryLink(d.replay_of, shortId(d.replay_of)) : '—'],
    ['Replayed as', replays],
  ]);
  ui.replay.hidden = d.is_test;
  ui.attemptRows.replaceChildren(
    ...(d.attempt_log.length ? d.attempt_log.map(attemptRow) : [h('tr', {}, h('td', { colspan: '7' }, 'No attempt yet.'))]),
  );
  ui.payload.textContent = d.payload;
  if (d.endpoint) showEndpoint(d.endpoint);
}

async function openDelivery(id: string): Promise<void> {
  clearTimeout(poll);
  const d = await client.deliveries.get.query({ delivery_id: id });
  openId = id;
  showDelivery(d);
  // A delivery still under way is watched until it settles. Not through act: a background
  // refresh succeeding does not make an action's error stale.
  if (d.status === 'pending' || d.status === 'retrying') {
    poll = setTimeout(() => {
      if (openId === id) void openDelivery(id).catch(complain);
    }, POLL_MS);
  }
}

// ─── A merchant's tax documents ───────────────────────────────────────────────

const DTE_TYPE_NAMES: Record<number, string> = {
  33: 'factura electrónica',
  34: 'factura exenta',
  39: 'boleta electrónica',
  41: 'boleta exenta',
  56: 'nota de débito',
  61: 'nota de crédito',
};

function documentRow(d: TaxDocument): HTMLTableRowElement {
  return h(
    'tr',
    { 'data-id': d.id },
    h('td', {}, `${d.dte_type} ${DTE_TYPE_NAMES[d.dte_type] ?? ''}`.trim()),
    h('td', {}, String(d.folio)),
    // A note names its invoice and its own number.
    h('td', { title: d.invoice_id }, [d.invoice_number ?? '—', d.note_number].filter(Boolean).join(' · ')),
    h('td', {}, h('span', { class: `status status-${d.status}` }, d.status)),
    h('td', {}, d.track_id ?? '—'),
    // SII's answer: why a document was rejected, or the objections (reparos) it was accepted with.
    h('td', { class: 'error' }, d.reason ?? ''),
    h('td', {}, when(d.updated_at)),
  );
}

/** The picked merchant's DTEs, newest first; none shown while every merchant is. */
async function loadDocuments(): Promise<void> {
  const merchantId = ui.merchant.value;
  if (!merchantId) {
    ui.dtePanel.hidden = true;
    return;
  }
  const docs = await client.dte.documents.query({ merchant_id: merchantId });
  // Another merchant was picked meanwhile: its own load shows its documents.
  if (ui.merchant.value !== merchantId) return;
  ui.dteMerchant.replaceChildren(merchantName(merchantNames.get(merchantId) ?? merchantId, merchantId));
  ui.dteRows.replaceChildren(...(docs.length ? docs.map(documentRow) : [h('tr', {}, h('td', { colspan: '7' }, 'No tax documents.'))]));
  ui.dtePanel.hidden = false;
}

// ─── Signing in and the actions ──────────────────────────────────────────────

/** A merchant's DTE folios left per document type, for those that have loaded CAFs (docs/decisions.md §15). */
function foliosNote(left: Outputs['dte']['foliosLeft'][number]['folios_left'] | undefined): string {
  if (!left) return '';
  return ` · DTE folios left: ${Object.entries(left)
    .map(([type, n]) => `${type}: ${n}`)
    .join(', ')}`;
}

async function enter(): Promise<void> {
  const [merchants, types, folios] = await Promise.all([client.merchants.list.query(), client.events.types.query(), client.dte.foliosLeft.query()]);
  const foliosOf = new Map(folios.map((f) => [f.merchant_id, f.folios_left]));
  for (const m of merchants) merchantNames.set(m.id, m.name);
  ui.login.hidden = true;
  ui.main.hidden = false;
  ui.signOut.hidden = false;
  ui.merchant.replaceChildren(option('', 'All merchants'), ...merchants.map((m) => option(m.id, `${m.name} · ${m.email}${foliosNote(foliosOf.get(m.id))}`)));
  ui.eventType.replaceChildren(option('', 'Any type'), ...types.map((t) => option(t.type, t.type)));
  await Promise.all([loadEndpointOptions(), loadDocuments()]);
  await search();
}

ui.loginForm.addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, ui.token.value.trim());
  ui.token.value = '';
  void act(enter, ui.loginForm.querySelector('button') ?? undefined);
});

ui.signOut.addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  showLogin();
});

ui.merchant.addEventListener('change', () => void act(async () => void (await Promise.all([loadEndpointOptions(), loadDocuments()]))));

ui.endpoint.addEventListener('change', () => {
  const e = endpoints.get(ui.endpoint.value);
  if (e) showEndpoint(e);
});

ui.filters.addEventListener('submit', (e) => {
  e.preventDefault();
  void act(() => search(), ui.filters.querySelector('button') ?? undefined);
});

ui.more.addEventListener('click', () => void act(() => search(true), ui.more));

ui.replay.addEventListener('click', () =>
  void act(async () => {
    if (!openId) return;
    const created = await client.deliveries.replay.mutate({ delivery_id: openId });
    say(`Replayed as delivery ${created.id}.`);
    await search();
    await openDelivery(created.id);
  }, ui.replay),
);

ui.toggle.addEventListener('click', () =>
  void act(async () => {
    if (!shownEndpoint) return;
    const id = { endpoint_id: shownEndpoint.id };
    const updated = shownEndpoint.enabled ? await client.endpoints.disable.mutate(id) : await client.endpoints.enable.mutate(id);
    showEndpoint(updated);
    say(updated.enabled ? 'Endpoint enabled; its failure streak is cleared.' : 'Endpoint disabled.');
    await loadEndpointOptions();
  }, ui.toggle),
);

ui.replayFailedForm.addEventListener('submit', (e) => {
  e.preventDefault();
  void act(async () => {
    const since = instant(ui.replaySince.value);
    if (!shownEndpoint || !since) return;
    const result = await client.deliveries.replayFailed.mutate({ endpoint_id: shownEndpoint.id, since });
    say(`Replayed ${result.created} failed deliveries.${result.has_more ? ' More remain: replay again.' : ''}`);
    await search();
  }, ui.replayFailedForm.querySelector('button') ?? undefined);
});

if (sessionStorage.getItem(TOKEN_KEY)) void act(enter);
else showLogin();
