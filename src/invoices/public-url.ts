/** The hosted invoice page: the one place its address is written (resources, e-mails, PDFs, pages). */
export function publicInvoiceUrl(publicBase: string, token: string): string {
  return `${publicBase}/i/${token}`;
}
