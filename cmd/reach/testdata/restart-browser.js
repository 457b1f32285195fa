// Drives the UI of a real `reach serve` after its restart, in Debian's
// chromium through playwright-core: the requests of the earlier run with
// their states, the approval the agent's key still finds approved in the
// inbox, the one nothing can use shown ended, and the audit page's links
// to the earlier requests.
// Env: BASE, CHROMIUM, PW, KEYED and KEYLESS (the approvals' ids). Prints
// one JSON object with what it saw; the Go test asserts on it.
const { chromium } = require(process.env.PW);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const base = process.env.BASE;
  const out = {};
  try {
    const page = await browser.newPage();
    await page.goto(`${base}/ui/`);
    await page.locator("tr[data-request]").first().waitFor();
    out.states = {};
    for (const row of await page.locator("tr[data-request]").all()) {
      out.states[await row.getAttribute("data-request")] = (await row.locator("td.state").innerText()).split("\n")[0].trim();
    }

    // The approval the agent's key still finds: approved in the inbox.
    await page.goto(`${base}/ui/approvals`);
    const keyed = page.locator(`.approval[data-approval="${process.env.KEYED}"]`);
    await keyed.waitFor();
    out.keyedState = (await keyed.locator(".head .state").innerText()).trim();
    const reason = page.locator(`form[action="/ui/approvals/${process.env.KEYED}/approve"] input[name="reason"]`);
    await reason.fill("checked after the restart");
    // A live update swaps the page's <main> while the reason is typed (its
    // field no longer focused): what was typed stays.
    await page.evaluate(() => { document.activeElement.blur(); return window.reachRefresh(); });
    out.reasonKept = await reason.inputValue();
    await Promise.all([page.waitForNavigation(), page.locator(`form[action="/ui/approvals/${process.env.KEYED}/approve"] button`).click()]);
    out.flash = (await page.locator(".flash").innerText()).trim();

    // The one nothing can use any more: shown ended, with why, and no
    // decision offered.
    await page.goto(`${base}/ui/approvals`);
    const keyless = page.locator(`.approval[data-approval="${process.env.KEYLESS}"]`);
    await keyless.waitFor();
    out.keylessState = (await keyless.locator(".head .state").innerText()).trim();
    out.keylessText = (await keyless.innerText()).replace(/\s+/g, " ").trim();
    out.keylessForms = await page.locator(`form[action^="/ui/approvals/${process.env.KEYLESS}/"]`).count();
    await page.goto(`${base}/ui/approvals`);
    const decided = page.locator(`.approval[data-approval="${process.env.KEYED}"]`);
    await decided.waitFor();
    out.keyedVotes = (await decided.locator("dd.votes").innerText()).replace(/\s+/g, " ").trim();

    await page.goto(`${base}/ui/audit`);
    await page.locator("#audit").waitFor();
    const links = await page.locator('a[href^="/ui/requests/"]').evaluateAll((as) => [...new Set(as.map((a) => a.getAttribute("href")))]);
    out.auditLinks = {};
    for (const href of links) {
      const resp = await page.goto(base + href);
      out.auditLinks[decodeURIComponent(href)] = resp.status();
    }
  } catch (e) {
    out.error = String(e && e.stack || e);
    try { out.error += "\nat " + (await browser.contexts()[0].pages()[0].url()) + "\n" + (await browser.contexts()[0].pages()[0].content()).slice(0, 3000); } catch (_) {}
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})();
