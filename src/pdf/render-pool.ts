import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { InvoiceWithItems } from '../invoices/queries.js';
import type { MerchantRow } from '../merchants/queries.js';
import type { PrintedDte, PrintedNote, RenderOptions } from './render.js';
import type { RenderTask } from './render-thread.js';

// A PDF is milliseconds of synchronous CPU (font subsetting, layout, deflate). On the event loop it
// stalls every other job of the worker (webhook attempts, SMTP, queue fetches) and every request
// of the web process; in threads of their own, renders use the cores the event loop does not.
// One core is left to the event loop; idle threads end, so a process that renders nothing keeps
// none. (A second thread on a two-core machine would not make another merchant's render wait
// less: it would share the same core, and each thread's start-up costs seconds of CPU.)
const THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));
const IDLE_MS = 30_000;

let pool: Piscina<RenderTask, Uint8Array> | null = null;

// The sibling module, whatever it is built as: render-thread.ts under tsx, .js in dist/.
const THREAD_MODULE = new URL(`./render-thread${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;

function renderPool(): Piscina<RenderTask, Uint8Array> {
  pool ??= new Piscina({
    filename: THREAD_MODULE,
    minThreads: 0,
    maxThreads: THREADS,
    idleTimeout: IDLE_MS,
  });
  return pool;
}

// The threads are shared by every merchant, and a merchant's renders run one after another:
// one that asks for its largest document many times at once waits for its own renders, while
// another merchant's render waits behind one of them at most (docs/limits.md, "One tenant cannot
// hurt the others").
const lastOfMerchant = new Map<string, Promise<unknown>>();

function afterMerchantsLast<T>(merchantId: string, run: () => Promise<T>): Promise<T> {
  const result = (lastOfMerchant.get(merchantId) ?? Promise.resolve()).then(run, run);
  const settled = result.then(
    () => {},
    () => {},
  );
  lastOfMerchant.set(merchantId, settled);
  void settled.then(() => {
    if (lastOfMerchant.get(merchantId) === settled) lastOfMerchant.delete(merchantId);
  });
  return result;
}

async function renderInThread(task: RenderTask): Promise<Buffer> {
  const bytes = await afterMerchantsLast(task.merchant.id, () => renderPool().run(task));
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** renderInvoicePdf (render.ts), in a render thread: the same bytes, off the event loop. */
export function renderInvoicePdfInThread(invoice: InvoiceWithItems, merchant: MerchantRow, opts: RenderOptions): Promise<Buffer> {
  return renderInThread({ invoice, merchant, opts });
}

/** renderNotePdf (render.ts), in a render thread. */
export function renderNotePdfInThread(note: PrintedNote, merchant: MerchantRow, dte: PrintedDte | null): Promise<Buffer> {
  return renderInThread({ note, merchant, dte });
}
