// A new user's way to why a sub-agent's call was refused and what to do:
// from the requests list, click the request, read its refused call on the
// request's page. Env: BASE, CHROMIUM, PW, REQ (the request's id), SHOT
// (a screenshot's path). Prints one JSON object with what it read and how
// many clicks it took.
const { chromium } = require(process.env.PW);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const out = { clicks: 0 };
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${process.env.BASE}/ui/`);
    const row = page.locator(`tr[data-request="${process.env.REQ}"]`);
    await row.waitFor();
    await Promise.all([page.waitForNavigation(), row.locator("a").first().click()]);
    out.clicks++;
    out.path = new URL(page.url()).pathname;
    const refused = page.locator("#timeline tbody tr", { has: page.locator("td.state.refused") });
    out.refusedRows = await refused.count();
    if (out.refusedRows > 0) {
      out.name = (await refused.first().locator("td").nth(2).innerText()).trim();
      out.text = (await refused.first().locator("td").last().innerText()).trim();
    }
    await page.screenshot({ path: process.env.SHOT, fullPage: true });
  } catch (e) {
    out.error = String(e);
  }
  await browser.close();
  process.stdout.write(JSON.stringify(out));
})();
