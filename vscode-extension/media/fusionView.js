// The fusion view's page: draws the graph the extension computed (src/fusionGraph.ts) as SVG,
// and reports clicks on kernels and the function picked. It holds no plan logic of its own.
(function () {
  const vscode = acquireVsCodeApi(); // provided by VS Code inside a webview
  const SVG = 'http://www.w3.org/2000/svg';
  const graphEl = /** @type {HTMLElement} */ (document.getElementById('graph'));
  const messageEl = /** @type {HTMLElement} */ (document.getElementById('message'));
  const summaryEl = /** @type {HTMLElement} */ (document.getElementById('summary'));
  const select = /** @type {HTMLSelectElement} */ (document.getElementById('function'));
  let highlighted = /** @type {string | null} */ (null);

  function el(name, attrs, text) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function clip(text, width) {
    const chars = Math.floor(width / 6.6);
    return text.length > chars ? text.slice(0, chars - 1) + '…' : text;
  }

  function draw(graph) {
    graphEl.textContent = '';
    if (!graph) return;
    if (graph.nodes.length === 0) {
      messageEl.textContent = 'No kernels: nothing in this function runs in parallel.';
      return;
    }
    const svg = el('svg', { width: graph.width, height: graph.height, viewBox: `0 0 ${graph.width} ${graph.height}`, role: 'img' });
    const defs = el('defs');
    const marker = el('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
    marker.appendChild(el('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    for (const edge of graph.edges) {
      const [[x1, y1], [x2, y2]] = edge.points;
      const mid = (y1 + y2) / 2;
      // Dashed red where the plan kept ops of the two kernels apart, buffers passed or not.
      const apart = edge.reasons.length > 0;
      const g = el('g', { class: apart ? 'edge apart' : 'edge buffer' });
      g.appendChild(el('path', { d: `M ${x1} ${y1} C ${x1} ${mid}, ${x2} ${mid}, ${x2} ${y2}`, 'marker-end': 'url(#arrow)' }));
      // Only buffers are written on the arrow: the dashes say "kept apart", the tooltip and the
      // list under the graph say why, and a large function would be unreadable otherwise.
      if (edge.buffers.length > 0) {
        g.appendChild(el('text', { x: (x1 + x2) / 2 + 6, y: mid - 3 }, clip(edge.buffers.join(', '), 160)));
      }
      const tip = [...edge.buffers.map((b) => `buffer ${b}`), ...edge.reasons.map((r) => `kept apart: ${r}`)];
      g.appendChild(el('title', {}, `${edge.from} → ${edge.to}\n${tip.join('\n')}`));
      svg.appendChild(g);
    }
    for (const node of graph.nodes) {
      const g = el('g', { class: 'kernel', 'data-kernel': node.id, transform: `translate(${node.x},${node.y})`, tabindex: 0 });
      g.appendChild(el('rect', { width: node.width, height: node.height, rx: 6 }));
      g.appendChild(el('text', { x: 10, y: 17, class: 'title' }, node.title + (node.instance ? `  in ${node.instance}` : '')));
      g.appendChild(el('text', { x: 10, y: 32, class: 'subtitle' }, clip(node.subtitle, node.width - 20)));
      node.ops.forEach((op, i) => {
        g.appendChild(el('text', { x: 14, y: 52 + i * 18, class: 'op' }, clip(op.text, node.width - 24)));
      });
      if (node.moreOps > 0) {
        g.appendChild(el('text', { x: 14, y: 52 + node.ops.length * 18, class: 'op more' }, `+ ${node.moreOps} more`));
      }
      const inputs = node.externalInputs.length ? `\nreads from outside: ${node.externalInputs.join(', ')}` : '';
      g.appendChild(el('title', {}, `${node.id}: ${node.subtitle}\n${node.ops.map((o) => o.text).join('\n')}${inputs}`));
      const choose = () => {
        setHighlight(node.id);
        vscode.postMessage({ type: 'selectKernel', kernel: node.id });
      };
      g.addEventListener('click', choose);
      g.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') choose();
      });
      svg.appendChild(g);
    }
    graphEl.appendChild(svg);
    // Why adjacent kernels stayed apart, in words as well as on the dashed arrows.
    const apart = graph.edges.filter((e) => e.reasons.length > 0);
    if (apart.length > 0) {
      const section = document.createElement('section');
      section.id = 'apart';
      const heading = document.createElement('h3');
      heading.textContent = 'Kept apart';
      section.appendChild(heading);
      const list = document.createElement('ul');
      for (const edge of apart) {
        for (const reason of edge.reasons) {
          const item = document.createElement('li');
          item.textContent = `${edge.from} → ${edge.to}: ${reason}`;
          list.appendChild(item);
        }
      }
      section.appendChild(list);
      graphEl.appendChild(section);
    }
    setHighlight(highlighted);
  }

  function setHighlight(kernel) {
    highlighted = kernel;
    for (const g of graphEl.querySelectorAll('g.kernel')) {
      g.classList.toggle('highlighted', g.getAttribute('data-kernel') === kernel);
    }
    const target = kernel && graphEl.querySelector(`g.kernel[data-kernel="${CSS.escape(kernel)}"]`);
    if (target) target.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }

  select.addEventListener('change', () => vscode.postMessage({ type: 'selectFunction', function: select.value }));

  window.addEventListener('message', (event) => {
    const message = event.data;
    if (message.type === 'plan') {
      select.textContent = '';
      const names = message.functions.map((f) => f.name);
      if (!names.includes(message.function)) message.functions.push({ name: message.function, kernels: 0 });
      for (const f of message.functions) {
        const option = document.createElement('option');
        option.value = f.name;
        option.textContent = `${f.name === 'main' ? 'top level' : f.name} (${f.kernels})`;
        option.selected = f.name === message.function;
        select.appendChild(option);
      }
      messageEl.textContent = message.message || '';
      document.body.classList.toggle('stale', Boolean(message.message) && !message.graph);
      if (message.graph) {
        const fused = message.graph.nodes.filter((n) => n.ops.length + n.moreOps > 1).length;
        const count = message.graph.nodes.length;
        summaryEl.textContent = `${count} kernel${count === 1 ? '' : 's'}, ${fused} fused from several ops · ${message.graph.strategy}`;
        highlighted = message.highlighted;
        draw(message.graph);
      }
    } else if (message.type === 'highlight') {
      setHighlight(message.kernel);
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
