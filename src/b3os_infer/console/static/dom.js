// Building the page from data without ever parsing it as HTML: every string becomes a
// text node or an attribute value, so model and user text cannot inject markup.

const SVG_NS = "http://www.w3.org/2000/svg";

function setProps(el, props) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.setAttribute("class", value);
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "value") el.value = value;
    else if (name === "checked") el.checked = Boolean(value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: h("td", {class: "num"}, "12"). */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  append(el, children);
  return el;
}

/** An SVG element, for charts drawn by our own code. */
export function s(tag, props, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props);
  append(el, children);
  return el;
}

export function show(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A stored UTC time (2026-12-01T12:42:20Z) to the minute: "2026-12-01 12:42". */
export function when(iso) {
  if (!iso) return "—";
  return iso.slice(0, 16).replace("T", " ");
}

export function number(n) {
  return Number(n || 0).toLocaleString("en-US");
}
