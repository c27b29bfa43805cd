import { randomBase62 } from '../../ids.js';
import type { PaymentProvider } from './provider.js';

/**
 * The built-in provider: no network, no money. Pay approves and "simulate a declined payment"
 * declines, each with a transaction id of its own, so every path of a real gateway can be tried
 * end to end. Never a merchant's default (docs/decisions.md §9): anyone could "pay" through it.
 */
export const sandboxProvider: PaymentProvider = {
  name: 'sandbox',
  simulatesDecline: true,
  async createSession() {
    return { sessionId: `sbx_cs_${randomBase62(24)}` };
  },
  async confirmPayment(req) {
    const approved = req.action === 'pay';
    return {
      status: approved ? 'succeeded' : 'failed',
      transactionId: `sbx_${approved ? 'ch' : 'dc'}_${randomBase62(24)}`,
      method: 'card',
    };
  },
};
