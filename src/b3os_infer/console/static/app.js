// The console's entry: sign-in with an admin key (kept in sessionStorage only), then one
// view at a time, picked by the URL's #fragment.

import { getJSON, session } from "./api.js";
import { h, show } from "./dom.js";
import { KeysView } from "./keys.js";
import { ModelsView } from "./models.js";
import { PlaygroundView } from "./playground.js";
import { UsageView } from "./usage.js";

const VIEWS = { models: ModelsView, keys: KeysView, usage: UsageView, playground: PlaygroundView };
const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const signOut = document.getElementById("sign-out");
let current = null;

function signInForm(message) {
  nav.hidden = true;
  signOut.hidden = true;
  who.textContent = "";
  const input = h("input", { id: "admin-key", type: "password", autocomplete: "off", placeholder: "b3os_…", required: true });
  const form = h("form", { id: "sign-in", class: "card sign-in", onsubmit: (e) => {
    e.preventDefault();
    session.keep(input.value.trim());
    start();
  } },
  h("h2", {}, "Sign in"),
  h("p", { class: "muted" }, "An admin key (", h("code", {}, "b3os-infer keys create --name ops --scope admin"),
    "). It is kept in this tab's session storage only and sent with each request."),
  h("label", { class: "field" }, "Admin key", input),
  message ? h("p", { class: "error", id: "sign-in-error" }, message) : null,
  h("button", { type: "submit", id: "sign-in-button" }, "Sign in"));
  show(main, form);
  input.focus();
}

async function route() {
  const name = location.hash.slice(1) in VIEWS ? location.hash.slice(1) : "models";
  for (const link of nav.querySelectorAll("a")) link.classList.toggle("active", link.dataset.view === name);
  if (current) current.unmount();
  const root = h("div", { class: "view", id: `view-${name}` });
  show(main, root);
  current = new VIEWS[name](root);
  try {
    await current.mount();
    root.dataset.ready = "1";
  } catch (error) {
    if (error.status === 401 || error.status === 403) return signInForm(error.message);
    show(root, h("p", { class: "error card" }, `Could not load this view: ${error.message}`));
  }
}

async function start() {
  if (!session.key()) return signInForm();
  try {
    await getJSON("/admin/keys");   // the key must hold the admin scope
  } catch (error) {
    session.forget();
    return signInForm(error.message);
  }
  nav.hidden = false;
  signOut.hidden = false;
  who.textContent = `key ${session.keyId()}`;
  await route();
}

signOut.addEventListener("click", () => {
  if (current) current.unmount();
  current = null;
  session.forget();
  signInForm();
});
window.addEventListener("hashchange", () => session.key() && route());
start();
