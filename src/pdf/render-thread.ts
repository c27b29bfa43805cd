import type { InvoiceWithItems } from '../invoices/queries.js';
import type { MerchantRow } from '../merchants/queries.js';
import { renderInvoicePdf, renderNotePdf, type PrintedDte, type PrintedNote, type RenderOptions } from './render.js';

/** An invoice's PDF or a credit or debit note's. */
export type RenderTask =
  | { invoice: InvoiceWithItems; merchant: MerchantRow; opts: RenderOptions }
  | { note: PrintedNote; merchant: MerchantRow; dte: PrintedDte | null };

/** Runs in a render thread (render-pool.ts): the task's rows arrive as structured clones. */
export default function render(task: RenderTask): Promise<Buffer> {
  return 'note' in task ? renderNotePdf(task.note, task.merchant, task.dte) : renderInvoicePdf(task.invoice, task.merchant, task.opts);
}
