import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The merchant's own site, where a checkout's success_url and cancel_url lead: a page per path on
 * 127.0.0.1, so a browser test sees the customer land there. Every visit is kept.
 */
export async function startShop(t: { teardown(fn: () => unknown): void }) {
  const visits: string[] = [];
  const server = createServer((req, res) => {
    visits.push(req.url ?? '/');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>Tienda</title><h1>Tienda: ${req.url === '/paid' ? 'pedido pagado' : 'pedido sin pagar'}</h1>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { success: `${base}/paid`, cancel: `${base}/order`, visits };
}
