/*! dcserve example store front — app bundle v1.0.0 (MIT) */
(function (global) {
  "use strict";

  var VERSION = "1.0.0";
  var CURRENCY = { code: "EUR", symbol: "\u20ac", decimals: 2 };
  var state = { products: [], cart: [], filter: "", sort: "name", page: 1, pageSize: 12 };

  function $(selector, root) { return (root || document).querySelector(selector); }
  function $all(selector, root) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); }

  function escapeHTML(text) {
    return String(text)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      .replace(/'/g, "&#39;");
  }

  function formatPrice(cents) {
    var value = (cents / 100).toFixed(CURRENCY.decimals);
    return CURRENCY.symbol + " " + value.replace(".", ",");
  }

  function debounce(fn, wait) {
    var timer = null;
    return function () {
      var args = arguments, self = this;
      clearTimeout(timer);
      timer = setTimeout(function () { fn.apply(self, args); }, wait);
    };
  }

  function compareBy(key) {
    return function (a, b) {
      if (a[key] < b[key]) return -1;
      if (a[key] > b[key]) return 1;
      return 0;
    };
  }

  function visibleProducts() {
    var needle = state.filter.trim().toLowerCase();
    var list = state.products.filter(function (p) {
      return !needle || p.name.toLowerCase().indexOf(needle) !== -1 || p.category.toLowerCase().indexOf(needle) !== -1;
    });
    list.sort(compareBy(state.sort));
    var start = (state.page - 1) * state.pageSize;
    return { total: list.length, items: list.slice(start, start + state.pageSize) };
  }

  function renderProduct(p) {
    return (
      '<article class="product" data-id="' + escapeHTML(p.id) + '">' +
      '<h3>' + escapeHTML(p.name) + "</h3>" +
      '<p class="category">' + escapeHTML(p.category) + "</p>" +
      '<p class="price">' + formatPrice(p.priceCents) + "</p>" +
      '<button class="add" data-id="' + escapeHTML(p.id) + '">Add to cart</button>' +
      "</article>"
    );
  }

  function renderPager(total) {
    var pages = Math.max(1, Math.ceil(total / state.pageSize));
    var html = "";
    for (var i = 1; i <= pages; i++) {
      html += '<button class="page' + (i === state.page ? " current" : "") + '" data-page="' + i + '">' + i + "</button>";
    }
    return html;
  }

  function cartTotal() {
    return state.cart.reduce(function (sum, line) { return sum + line.priceCents * line.quantity; }, 0);
  }

  function renderCart() {
    var el = $("#cart");
    if (!el) return;
    if (state.cart.length === 0) {
      el.innerHTML = "<p>Your cart is empty.</p>";
      return;
    }
    el.innerHTML =
      "<ul>" +
      state.cart.map(function (line) {
        return "<li>" + escapeHTML(line.name) + " \u00d7 " + line.quantity + " \u2014 " + formatPrice(line.priceCents * line.quantity) + "</li>";
      }).join("") +
      "</ul><p class=\"total\">Total: " + formatPrice(cartTotal()) + "</p>";
  }

  function render() {
    var view = visibleProducts();
    var list = $("#products");
    if (list) list.innerHTML = view.items.map(renderProduct).join("");
    var pager = $("#pager");
    if (pager) pager.innerHTML = renderPager(view.total);
    renderCart();
  }

  function addToCart(id) {
    var product = state.products.find(function (p) { return p.id === id; });
    if (!product) return;
    var line = state.cart.find(function (l) { return l.id === id; });
    if (line) line.quantity += 1;
    else state.cart.push({ id: product.id, name: product.name, priceCents: product.priceCents, quantity: 1 });
    try { localStorage.setItem("cart", JSON.stringify(state.cart)); } catch (e) { /* private mode */ }
    renderCart();
  }

  function restoreCart() {
    try {
      var saved = JSON.parse(localStorage.getItem("cart") || "[]");
      if (Array.isArray(saved)) state.cart = saved;
    } catch (e) {
      state.cart = [];
    }
  }

  function bindEvents() {
    document.addEventListener("click", function (event) {
      var target = event.target;
      if (target.matches("button.add")) addToCart(target.getAttribute("data-id"));
      if (target.matches("button.page")) {
        state.page = parseInt(target.getAttribute("data-page"), 10) || 1;
        render();
      }
    });
    var search = $("#search");
    if (search) {
      search.addEventListener("input", debounce(function () {
        state.filter = search.value;
        state.page = 1;
        render();
      }, 150));
    }
    var sort = $("#sort");
    if (sort) {
      sort.addEventListener("change", function () {
        state.sort = sort.value;
        render();
      });
    }
  }

  function loadCatalog() {
    return fetch("/api/catalog.json", { headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("catalog request failed: " + response.status);
        return response.json();
      })
      .then(function (catalog) {
        state.products = catalog.products || [];
        render();
        return catalog;
      });
  }

  function start() {
    restoreCart();
    bindEvents();
    return loadCatalog().catch(function (error) {
      var list = $("#products");
      if (list) list.innerHTML = '<p class="error">' + escapeHTML(error.message) + "</p>";
    });
  }

  global.StoreFront = { version: VERSION, start: start, formatPrice: formatPrice, escapeHTML: escapeHTML, state: state };
  if (typeof document !== "undefined" && document.readyState !== "loading") start();
  else if (typeof document !== "undefined") document.addEventListener("DOMContentLoaded", start);
})(typeof window !== "undefined" ? window : this);
