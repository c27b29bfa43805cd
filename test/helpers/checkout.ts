// The checkout request most tests start from: each call a customer of its own.
export const SUCCESS = 'https://shop.example/orders/1/paid';
export const CANCEL = 'https://shop.example/orders/1';

let seq = 0;

export function checkoutBody(extra: Record<string, unknown> = {}): Record<string, any> {
  seq += 1;
  return {
    amount: 11900,
    description: 'Pedido 1001',
    customer_email: `comprador${seq}@example.cl`,
    customer_name: `Comprador ${seq}`,
    success_url: SUCCESS,
    cancel_url: CANCEL,
    ...extra,
  };
}
