// Drives the reach UI in Debian's chromium through playwright-core.
// Env: BASE (server URL), CHROMIUM (browser path), SHOTS (screenshot folder),
// PW (path to playwright-core), KEY (the API key to sign in with). Prints
// one JSON object with what it saw; the Go test asserts on it.
const { chromium } = require(process.env.PW);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const base = process.env.BASE;
  const out = { overflow: {} };
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    const shot = (name) => page.screenshot({ path: `${process.env.SHOTS}/${name}.png`, fullPage: true });
    const overflow = async (name) => {
      out.overflow[name] = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    };

    // 0. Signing in: a page leads to the login page; a wrong key is
    // refused; the right one signs in with a session cookie.
    await page.goto(`${base}/ui/`);
    out.loginRedirect = new URL(page.url()).pathname;
    await page.fill("#credential", "rk_wrong");
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    out.loginError = (await page.locator("#login-error").innerText()).trim();
    await shot("0-login");
    await page.fill("#credential", process.env.KEY);
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    out.user = (await page.locator("#user").innerText()).trim();
    const cookie = (await context.cookies()).find((c) => c.name.includes("reach_session"));
    out.cookie = cookie ? { httpOnly: cookie.httpOnly, secure: cookie.secure, sameSite: cookie.sameSite, value: cookie.value } : {};

    // 1. The requests list shows each request's state; a filter keeps one.
    await page.locator('tr[data-request="busy"]').waitFor();
    out.listStates = {};
    for (const row of await page.locator("tr[data-request]").all()) {
      const state = (await row.locator("td.state").innerText()).split("\n")[0].trim();
      out.listStates[await row.getAttribute("data-request")] = state;
    }
    await shot("1-requests");
    await overflow("requests@1400");
    await Promise.all([page.waitForNavigation(), page.click('a[data-filter="idle"]')]);
    out.idleFiltered = await page.locator("tr[data-request]").evaluateAll((rs) => rs.map((r) => r.dataset.request));

    // 1b. A request stopped by a name and for a reason written as markup
    // (a stop may come from another instance): its page shows them as
    // text, with when it stopped, and runs nothing of them.
    await page.goto(`${base}/ui/requests/hostile`);
    out.hostileStop = (await page.locator("main .err").first().innerText()).trim();
    out.hostileRan = await page.evaluate(() => String(window.__pwned || ""));
    out.hostileMarkup = await page.locator('main img[src="x"], main script:not([src])').evaluateAll((es) => es.filter((e) => /pwned/.test(e.outerHTML)).length);

    // 2. A wide fan-out: 30 boxes wrapped into rows, fitted to the page,
    // zoomed in, then folded under its model turn.
    await page.goto(`${base}/ui/requests/wide`);
    await page.locator("#graph svg").waitFor();
    out.wideBoxes = await page.locator("#graph svg g.frame").count();
    // Both widths in one synchronous read: a live update may swap <main>
    // between two separate reads, and a detached box measures 0.
    const fit = await page.evaluate(() => {
      const box = document.getElementById("graph");
      return { box: box.clientWidth, svg: box.querySelector("svg").getBoundingClientRect().width };
    });
    out.graphBoxWidth = fit.box;
    out.wideFitWidth = fit.svg;
    await page.click('[data-zoom="in"]');
    await page.click('[data-zoom="in"]');
    out.wideZoomedWidth = await page.evaluate(() => document.querySelector("#graph svg").getBoundingClientRect().width);
    await shot("2-graph-wide");
    await page.click('[data-zoom="fit"]');
    await overflow("request@1400");
    await Promise.all([page.waitForNavigation(), page.locator("#graph svg g.frame.model").first().click()]);
    out.wideFoldedBoxes = await page.locator("#graph svg g.frame").count();
    out.wideFoldMark = (await page.locator("#graph svg text.folded").first().textContent()).trim();
    await shot("3-graph-folded");

    // 3. The running request: its graph shows the refused cycle; Cancel
    // (with a reason) stops it, and its stop buttons go.
    await page.goto(`${base}/ui/requests/busy`);
    await page.locator("#graph svg").waitFor();
    out.cycleEdges = await page.locator("#graph svg path.cycle").count();
    out.refusedFrames = await page.locator("#graph svg g.frame.refused").count();
    const form = page.locator('form:has(button[value="cancel"])');
    await form.locator('input[name="reason"]').fill("runaway in the browser test");
    await Promise.all([page.waitForNavigation(), form.locator("button").click()]);
    out.stateAfterCancel = (await page.locator("#state").innerText()).trim();
    out.stopFormsAfterCancel = await page.locator('form[action^="/ui/stop/"]').count();
    await shot("4-cancelled");

    // 4. The request waiting for approval: its page shows the approval
    // (with the agent's why) and approves it there.
    await page.goto(`${base}/ui/requests/refund`);
    const card = page.locator("#approvals ~ .approval").first();
    await card.waitFor();
    out.approvalWhy = (await card.locator("dd.why").innerText()).trim();
    out.expiresText = (await card.locator(".head time").innerText()).trim();
    await page.locator('form[action$="/approve"] input[name="reason"]').fill("looks right");
    await Promise.all([page.waitForNavigation(), page.locator('form[action$="/approve"] button').click()]);
    out.approvalFlash = (await page.locator(".flash").innerText()).trim();
    await shot("5-approve-on-request");

    // 5. The inbox shows the decision, who voted, and human times.
    await page.goto(`${base}/ui/approvals`);
    const ap = page.locator(".approval[data-approval]").first();
    await ap.waitFor();
    out.votes = (await ap.locator("dd.votes").innerText()).trim();
    await shot("6-approvals");
    await overflow("approvals@1400");

    // 6-7. The audit log (long rows wrap) and the tools.
    await page.goto(`${base}/ui/audit`);
    await page.locator("#audit").waitFor();
    await shot("7-audit");
    await overflow("audit@1400");
    await page.goto(`${base}/ui/tools`);
    await page.locator("#tools").waitFor();
    await shot("8-tools");
    await overflow("tools@1400");

    // 8. At 800 px every page fits the width.
    await page.setViewportSize({ width: 800, height: 900 });
    for (const [name, path] of [["requests", "/ui/"], ["request", "/ui/requests/wide"], ["approvals", "/ui/approvals"], ["audit", "/ui/audit"], ["tools", "/ui/tools"]]) {
      await page.goto(base + path);
      await page.waitForLoadState("load");
      await overflow(`${name}@800`);
      await shot(`800-${name}`);
    }

    // 9. Log out: the session ends; a page leads to the login page again.
    await Promise.all([page.waitForNavigation(), page.click("#logout")]);
    await page.goto(`${base}/ui/`);
    out.afterLogout = new URL(page.url()).pathname;
    await shot("9-logged-out");
  } catch (e) {
    out.error = String(e && e.stack || e);
    try { out.error += "\nat " + (await browser.contexts()[0].pages()[0].url()) + "\n" + (await browser.contexts()[0].pages()[0].content()).slice(0, 3000); } catch (_) {}
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})();
