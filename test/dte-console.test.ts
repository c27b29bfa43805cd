// The support console shows each merchant's DTE folios left per type where it lists merchants.
import t from 'tap';
import { openConsole } from './helpers/admin-console.js';
import { testApp } from './helpers/app.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { until } from './helpers/until.js';

const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';
const sii = siiAuthority();
t.teardown(() => sii.cleanup());

t.test('the merchant list shows the folios left per type', async (t) => {
  const h = await testApp(t, { ADMIN_TOKEN: TOKEN, SII_CERT_FILE: sii.certFile });
  const issuer = await h.merchant({ name: 'Emisora SpA' });
  await h.merchant({ name: 'Sin DTE SpA' });
  await dteMerchant(h, issuer.id, sii, [{ type: 33, from: 1, to: 30 }, { type: 34, from: 1, to: 5 }]);
  const { page, pageErrors } = await openConsole(t, h);
  await page.locator('#login').waitFor({ state: 'visible' });
  await page.fill('#token', TOKEN);
  await page.click('#login-form button');
  await page.locator('#console').waitFor({ state: 'visible' });
  const options = await until('the merchants', async () => {
    const texts = await page.locator('#f-merchant option').allTextContents();
    return texts.length === 3 ? texts : null;
  });
  t.ok(options.includes('Emisora SpA · facturacion@test.cl · DTE folios left: 33: 30, 34: 5, 61: 0'), 'folios per type beside the merchant');
  t.ok(options.includes('Sin DTE SpA · facturacion@test.cl'), 'nothing for a merchant without CAFs');
  t.same(pageErrors, []);
});
