// What an integrator's generator makes of the served document: openapi-typescript with its default
// options, then natural calls through openapi-fetch, compiled by TypeScript 5 with --strict.
// Compilation only: nothing is sent.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { testApp } from './helpers/app.js';

const run = promisify(execFile);
// Both live in the client workspace, with the TypeScript 5 openapi-typescript needs.
const OPENAPI_TS = path.resolve('sdk/node_modules/openapi-typescript/bin/cli.js');
const TSC = path.resolve('sdk/node_modules/typescript/bin/tsc');

// Only the required fields of each request: every default, and every body that may be left out,
// is left out. The error branches read each code's own details.
const CALLS = `
import createClient from 'openapi-fetch';
import type { paths } from './api.js';

const api = createClient<paths>({ baseUrl: 'https://facturas.example.cl', headers: { 'X-API-Key': 'ik_live_0000' } });

export async function invoiceLifecycle(): Promise<string | undefined> {
  const client = await api.POST('/api/v1/external/clients', { body: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl' } });
  if (client.error?.code === 'client_already_exists') return client.error.details.email;

  const created = await api.POST('/api/v1/external/invoices', {
    body: {
      client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl' },
      due_date: '2026-12-31',
      items: [{ description: 'Consultoría noviembre', unit_price: 5000 }],
    },
  });
  if (created.error) {
    switch (created.error.code) {
      case 'currency_conversion_failed': {
        const { currency, base_currency, date } = created.error.details;
        return \`\${currency}/\${base_currency} on \${date}\`;
      }
      case 'currency_not_supported':
        return created.error.details.currency;
      case 'validation_error':
        return created.error.details.errors.map((e) => \`\${e.path}: \${e.message}\`).join('; ');
      default:
        return created.error.message;
    }
  }
  const path = { invoice_id: created.data.invoice_id };

  const sent = await api.POST('/api/v1/external/invoices/{invoice_id}/send', { params: { path } });
  if (sent.error?.code === 'invoice_invalid_state') return sent.error.details.status;
  const reminded = await api.POST('/api/v1/external/invoices/{invoice_id}/remind', { params: { path } });
  if (reminded.data) return String(reminded.data.reminder_number);
  const paid = await api.POST('/api/v1/external/invoices/{invoice_id}/mark-paid', { params: { path } });
  if (paid.error?.code === 'invoice_not_sent') {
    const status: 'draft' = paid.error.details.status;
    return status;
  }
  const cancelled = await api.POST('/api/v1/external/invoices/{invoice_id}/cancel', { params: { path } });
  if (cancelled.error?.code === 'invoice_invalid_state' && cancelled.error.details.payment_in_progress) return 'retry later';
  return cancelled.data?.status;
}

// Before any narrowing: every member of an operation's error union, codes without details
// included, has \`details\` (null for those), and \`retry\` is one of the documented forms.
export async function anyError(): Promise<string | undefined> {
  const got = await api.GET('/api/v1/external/invoices/{invoice_id}', { params: { path: { invoice_id: 'inv_0000' } } });
  if (!got.error) return got.data.status;
  const { code, retry, details } = got.error;
  console.log(code, retry, details);
  if (got.error.code === 'invoice_not_found') {
    // @ts-expect-error no details: never an object
    return got.error.details?.status;
  }
  // Falsy for the codes without details: what is left are the details objects.
  if (details && 'errors' in details) return details.errors[0]?.path;
  if (details && 'required_scope' in details) return details.required_scope;
  return retry;
}

export async function stillChecked(): Promise<void> {
  // @ts-expect-error due_date is required: the generated types are not a blanket "anything goes"
  await api.POST('/api/v1/external/invoices', { body: { client: { name: 'A', email: 'a@b.cl' }, items: [{ description: 'x', unit_price: 1 }] } });
}
`;

const TSCONFIG = {
  compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [] },
  files: ['calls.ts'],
};

t.test('types generated with default options compile natural calls under tsc --strict', async (t) => {
  const h = await testApp(t);
  const res = await h.api('GET', '/docs/openapi.json');
  t.equal(res.status, 200);

  const dir = await mkdtemp(path.join(tmpdir(), 'openapi-types-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'openapi.json'), res.raw);
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  await writeFile(path.join(dir, 'calls.ts'), CALLS);
  // openapi-fetch, as an integrator's project would have it installed.
  await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');

  await run(process.execPath, [OPENAPI_TS, 'openapi.json', '--output', 'api.d.ts'], { cwd: dir });
  const compiled = await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--strict', '--noEmit'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 }).then(
    () => ({ code: 0, output: '' }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, output: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
  );
  t.equal(compiled.output, '', 'no compiler message');
  t.equal(compiled.code, 0, 'tsc --strict --noEmit succeeds');
});
