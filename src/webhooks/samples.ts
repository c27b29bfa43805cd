import type { EventType } from '../events/emit.js';
import { newId } from '../ids.js';

// What each event type's invoice looks like afterwards, so a test event reads like a real one.
const invoiceStatusAfter: Partial<Record<EventType, string>> = {
  'invoice.created': 'draft',
  'invoice.sent': 'sent',
  'invoice.viewed': 'viewed',
  'invoice.overdue': 'overdue',
  'invoice.reminder_sent': 'sent',
  'invoice.paid': 'paid',
  'invoice.cancelled': 'cancelled',
};

/**
 * `data` of a test event (decisions §10: `POST .../test` builds a sample event): the shape of the
 * real resource with made-up values, so a receiver can exercise its parsing end to end.
 */
export function sampleEventData(type: EventType, at: string): Record<string, unknown> {
  const [kind] = type.split('.') as [string];
  if (kind === 'client') {
    return {
      object: { id: newId(), name: 'Cliente de Prueba SpA', email: 'cliente@example.cl', rut: '76086428-5', phone: null, address: null, created_at: at, updated_at: at },
    };
  }
  if (kind === 'payment') {
    const failed = type === 'payment.failed';
    return {
      object: {
        id: newId(), invoice_id: newId(), invoice_number: 'INV-000001', amount: '11900.00', currency: 'CLP', method: 'card', provider: 'sandbox',
        transaction_id: `test_${newId()}`, status: failed ? 'failed' : 'succeeded', paid_at: failed ? null : at, created_at: at,
      },
    };
  }
  if (kind === 'checkout') {
    const completed = type === 'checkout.completed';
    return {
      object: {
        checkout_id: newId(), status: completed ? 'completed' : 'expired', payment_status: completed ? 'paid' : 'unpaid', invoice_id: newId(),
        checkout_url: 'https://example.invalid/checkout/test', external_reference: 'TEST-1', completed_at: completed ? at : null,
      },
    };
  }
  const status = invoiceStatusAfter[type] ?? 'sent';
  const data: Record<string, unknown> = {
    object: {
      id: newId(), invoice_number: status === 'draft' ? null : 'INV-000001', status, currency: 'CLP', subtotal: '10000.00', tax_amount: '1900.00',
      total: '11900.00', amount_paid: status === 'paid' ? '11900.00' : '0.00', client: { name: 'Cliente de Prueba SpA', email: 'cliente@example.cl', rut: '76086428-5' },
      items: [{ description: 'Servicio de prueba', quantity: '1', unit_price: '10000.00', total: '10000.00' }],
      external_reference: 'TEST-1', created_at: at, updated_at: at,
    },
  };
  if (type === 'invoice.reminder_sent') data.reminder = { reminder_number: 1, sent_at: at, kind: 'manual' };
  return data;
}
