import type { InvoiceWithItems } from '../invoices/queries.js';
import type { MerchantRow } from '../merchants/queries.js';
import { renderInvoicePdf, type RenderOptions } from './render.js';

export interface RenderTask {
  invoice: InvoiceWithItems;
  merchant: MerchantRow;
  opts: RenderOptions;
}

/** Runs in a render thread (render-pool.ts): the task's rows arrive as structured clones. */
export default function render({ invoice, merchant, opts }: RenderTask): Promise<Buffer> {
  return renderInvoicePdf(invoice, merchant, opts);
}
