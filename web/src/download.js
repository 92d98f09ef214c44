// SVG and PNG downloads of a plot (an <svg> inside a <figure>).

function save(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function svgText(svg) {
  const copy = svg.cloneNode(true);
  copy.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  const style = document.createElementNS("http://www.w3.org/2000/svg", "style");
  style.textContent = "text{font-family:sans-serif;font-size:10px}";
  copy.insertBefore(style, copy.firstChild);
  // A white background, so the PNG is not transparent.
  const bg = document.createElementNS("http://www.w3.org/2000/svg", "rect");
  bg.setAttribute("width", "100%");
  bg.setAttribute("height", "100%");
  bg.setAttribute("fill", "white");
  copy.insertBefore(bg, style.nextSibling);
  return new XMLSerializer().serializeToString(copy);
}

export function downloadSvg(svg, name) {
  save(new Blob([svgText(svg)], { type: "image/svg+xml" }), `${name}.svg`);
}

export function downloadPng(svg, name) {
  const { width, height } = svg.getBoundingClientRect();
  const img = new Image();
  img.onload = () => {
    const canvas = document.createElement("canvas");
    canvas.width = 2 * width;
    canvas.height = 2 * height;
    const ctx = canvas.getContext("2d");
    ctx.scale(2, 2);
    ctx.drawImage(img, 0, 0, width, height);
    canvas.toBlob((blob) => save(blob, `${name}.png`), "image/png");
  };
  img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svgText(svg));
}

// Puts `plot` (an <svg>, or Plot's <figure> around one) into `figure` after
// its caption, with SVG and PNG buttons.
export function showPlot(figure, plot) {
  for (const old of figure.querySelectorAll(":scope > .plot-body, :scope > .downloads")) {
    old.remove();
  }
  const body = document.createElement("div");
  body.className = "plot-body";
  body.append(plot);
  figure.append(body);
  const bar = document.createElement("div");
  bar.className = "downloads";
  for (const [label, fn] of [["SVG", downloadSvg], ["PNG", downloadPng]]) {
    const b = document.createElement("button");
    b.textContent = label;
    b.title = `Download this plot as ${label}`;
    b.addEventListener("click", () => {
      const svgs = body.querySelectorAll("svg");
      fn(svgs[svgs.length - 1], figure.id);
    });
    bar.append(b);
  }
  figure.append(bar);
}
