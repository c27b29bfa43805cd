export function checkoutUrl(publicBase: string, token: string): string {
  return `${publicBase}/checkout/${token}`;
}

/** Where a redirect gateway sends the customer back with its verdict. */
export function gatewayReturnUrl(publicBase: string, token: string): string {
  return `${checkoutUrl(publicBase, token)}/return`;
}

/** Where a notifying gateway reports the merchant's payments (docs/decisions.md §16). */
export function notificationUrl(publicBase: string, provider: string, merchantId: string): string {
  return `${publicBase}/providers/${provider}/notifications/${merchantId}`;
}
