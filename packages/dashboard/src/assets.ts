/**
 * The dashboard's front end, prebuilt: one stylesheet and one small script served from the
 * package itself (no CDN, no web fonts, no build step for users).
 */

/**
 * The icon browsers show in the tab, served at `{basePath}/assets/icon.svg`: an orbit around a
 * sun, in the page's accent colour. Linked from every page, so no browser asks for a
 * `/favicon.ico` the dashboard does not have (a 404 on every page view, in a mounted
 * dashboard's host logs too).
 */
export const APP_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<circle cx="16" cy="16" r="5" fill="#2f5bd3"/>
<ellipse cx="16" cy="16" rx="13" ry="7" fill="none" stroke="#2f5bd3" stroke-width="2" transform="rotate(-30 16 16)"/>
<circle cx="27" cy="10" r="2.5" fill="#2f5bd3"/>
</svg>`;

/** The stylesheet, served at `{basePath}/assets/app.css`. */
export const APP_CSS = `
:root{--bg:#f6f7f9;--panel:#fff;--ink:#1c2330;--muted:#5d6776;--line:#dde1e7;--accent:#2f5bd3;
--ok:#1d7a46;--okbg:#e3f4ea;--bad:#b42318;--badbg:#fdecea;--warn:#a15c00;--warnbg:#fff3dc;--run:#1f5fae;--runbg:#e4eefb;
--idle:#5d6776;--idlebg:#eef0f3;font-family:system-ui,-apple-system,"Segoe UI",Roboto,Ubuntu,sans-serif;font-size:15px;color:var(--ink);background:var(--bg)}
*{box-sizing:border-box}body{margin:0;line-height:1.45}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
header.top{display:flex;align-items:center;gap:18px;flex-wrap:wrap;padding:10px 20px;background:#18202e;color:#fff}
header.top .brand{font-weight:700;letter-spacing:.02em;color:#fff}
header.top nav{display:flex;gap:4px;flex-wrap:nowrap;white-space:nowrap}
header.top nav a{color:#c9d3e3;padding:5px 10px;border-radius:6px}
header.top nav a[aria-current=page]{background:#2e3a50;color:#fff}
header.top .live{margin-left:auto;font-size:.85em;color:#9fb0c8}
header.top .live.on::before{content:"";display:inline-block;width:8px;height:8px;border-radius:50%;background:#3ccf7a;margin-right:6px}
main{max-width:1240px;margin:0 auto;padding:18px 20px 40px}
h1{font-size:1.45em;margin:4px 0 14px;overflow-wrap:break-word}h2{font-size:1.1em;margin:22px 0 10px}
.panel{background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:14px 16px;margin-bottom:16px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:12px;margin-bottom:16px}
.stat{background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.stat .v{font-size:1.6em;font-weight:650}.stat .k{color:var(--muted);font-size:.88em}
.muted{color:var(--muted)}.small{font-size:.86em}
table{width:100%;border-collapse:collapse;background:var(--panel);border:1px solid var(--line);border-radius:10px;overflow:hidden}
th,td{text-align:left;padding:8px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.82em;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);background:#fafbfc}
tr:last-child td{border-bottom:0}
td ol{margin:0;padding-left:1.1em}ol.runs{list-style:none;padding-left:0}ol.runs li>span{white-space:nowrap}td .mono.small{white-space:nowrap}td>div{min-width:0}td .name{font-weight:600;overflow-wrap:break-word;display:inline-block;max-width:16em}
/* A concurrency group's name may be one long word (a customer id): it breaks rather than stick out. */
.group-name{overflow-wrap:anywhere}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:.82em;font-weight:600;white-space:nowrap;background:var(--idlebg);color:var(--idle)}
.st-completed,.st-handed_off,.st-ok,.st-enabled{background:var(--okbg);color:var(--ok)}
.st-failed,.st-abandoned,.st-unhealthy,.st-lost{background:var(--badbg);color:var(--bad)}
.st-skipped,.st-missed,.st-paused,.st-buffered,.st-cancelled,.st-stopped,.st-degraded{background:var(--warnbg);color:var(--warn)}
.st-running,.st-claimed,.st-ready,.st-pending{background:var(--runbg);color:var(--run)}
form.act{display:inline-flex;gap:6px;align-items:center;flex-wrap:wrap;margin:2px 6px 2px 0}
.actions{display:flex;flex-wrap:wrap;gap:4px;align-items:center}
button{font:inherit;font-size:.9em;padding:5px 12px;border-radius:7px;border:1px solid #b9c2d0;background:#fff;color:var(--ink);cursor:pointer}
button:hover{background:#f0f3f8}button.danger{color:var(--bad);border-color:#e7b4ae}button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
input,select{font:inherit;font-size:.9em;padding:5px 8px;border:1px solid #b9c2d0;border-radius:7px;background:#fff;max-width:100%}
details.more summary{cursor:pointer;color:var(--accent);font-size:.9em;margin-top:4px}
textarea{font:inherit;font-size:.9em;padding:5px 8px;border:1px solid #b9c2d0;border-radius:7px;background:#fff;max-width:100%;resize:vertical}
details.form-panel{margin-bottom:14px}form.schedule-form{display:block;margin:10px 0 4px}
.schedule-form .fields{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:10px 14px;margin-bottom:10px}
.schedule-form label{display:flex;flex-direction:column;gap:3px;font-size:.84em;color:var(--muted)}.schedule-form label.wide{grid-column:1/-1}
.schedule-form input,.schedule-form select,.schedule-form textarea{color:var(--ink);width:100%}
.schedule-form .cron-preview{grid-column:1/-1;min-height:2.2em;padding:6px 10px;border:1px dashed var(--line);border-radius:8px}.cron-preview p{margin:0 0 4px}.cron-preview ol.runs{margin:0}
.schedule-form .choice-hint{color:var(--muted)}
.schedule-form label.check{flex-direction:row;align-items:center;gap:6px;color:var(--ink)}.schedule-form label.check input{width:auto}
.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin-bottom:12px}.filters label{display:flex;flex-direction:column;font-size:.82em;color:var(--muted);gap:2px}
.pager{display:flex;gap:12px;align-items:center;margin:12px 0}
#flash{margin-bottom:12px}#flash:empty{display:none}.flash{padding:10px 14px;border-radius:8px;background:var(--badbg);color:var(--bad);border:1px solid #f1c1bb}.flash.ok{background:var(--okbg);color:var(--ok);border-color:#b9e2c8}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0}dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;overflow-wrap:break-word;min-width:0}
pre{background:#f3f5f8;border:1px solid var(--line);border-radius:8px;padding:10px;overflow:auto;max-height:320px;font-size:.85em;white-space:pre-wrap;word-break:break-word}
.timeline{list-style:none;margin:0;padding:0 0 0 6px}
.timeline li{position:relative;padding:6px 0 10px 22px;border-left:2px solid var(--line)}
.timeline li::before{content:"";position:absolute;left:-7px;top:11px;width:12px;height:12px;border-radius:50%;background:var(--idle);border:2px solid #fff}
.timeline li.t-handed_off::before,.timeline li.t-completed::before{background:var(--ok)}.timeline li.t-abandoned::before,.timeline li.t-failed::before{background:var(--bad)}
.timeline li.t-missed::before,.timeline li.t-skipped::before,.timeline li.t-buffered::before,.timeline li.t-cancelled::before,.timeline li.t-paused::before{background:var(--warn)}
.timeline li.t-claimed::before,.timeline li.t-pending::before,.timeline li.t-running::before{background:var(--run)}
.timeline .when{font-weight:600}.timeline .meta{color:var(--muted);font-size:.88em;display:flex;gap:12px;flex-wrap:wrap}
.dag-scroll{overflow:auto;margin-bottom:16px;background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:8px}
svg.dag .edge{fill:none;stroke:#8b96a8;stroke-width:1.5}svg.dag .arrowhead{fill:#8b96a8}
svg.dag .node rect{fill:#fff;stroke:#8b96a8;stroke-width:1.5}svg.dag text{text-anchor:middle;font-size:12.5px;fill:var(--ink)}svg.dag text.sub{font-size:11px;fill:var(--muted)}
svg.dag .st-completed rect{fill:var(--okbg);stroke:var(--ok)}svg.dag .st-failed rect{fill:var(--badbg);stroke:var(--bad);stroke-width:2.5}
svg.dag .st-running rect,svg.dag .st-ready rect{fill:var(--runbg);stroke:var(--run)}svg.dag .st-skipped rect,svg.dag .st-cancelled rect{fill:var(--warnbg);stroke:var(--warn)}
svg.dag .st-not_started rect{fill:#fff;stroke-dasharray:4 3}
.task{border-left:4px solid var(--line)}.task.st-failed{border-left-color:var(--bad)}.task.st-completed{border-left-color:var(--ok)}
.task h3{margin:0 0 6px;font-size:1em;display:flex;gap:8px;align-items:center;flex-wrap:wrap}
/* A task's section is a panel whatever its status: only the badge and the left border are coloured. */
.panel.task{background:var(--panel);color:var(--ink)}
.error-msg{margin:0 0 6px;color:var(--bad);font-weight:600;overflow-wrap:break-word}details.stack summary{cursor:pointer;color:var(--muted);margin-bottom:4px}
.note-panel{background:var(--warnbg);border-color:#f0d9a8;color:var(--ink)}.note{overflow-wrap:break-word}
/* A signal's name may be one long word: the line breaks rather than stick out. */
.signal-wait{margin:0 0 6px;overflow-wrap:anywhere}
form.act.signal-form{display:grid;grid-template-columns:minmax(0,1fr);gap:6px;max-width:30em;margin:0 0 8px}
.signal-form label{display:flex;flex-direction:column;gap:3px;font-size:.84em;color:var(--muted)}
.signal-form input,.signal-form textarea{color:var(--ink);width:100%}.signal-form button{justify-self:start}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
/* A run stays on one line where there is room; a squeezed column breaks it between its zone's time and UTC. */
@media (min-width:1100px){ol.runs li{white-space:nowrap}}
@media (max-width:760px){
main{padding:12px 12px 32px}header.top{padding:8px 12px;gap:4px 8px}
/* The navigation gets its own row, on one line at 390px; narrower screens scroll it rather than wrap. */
header.top nav{order:3;flex-basis:100%;gap:0;overflow-x:auto;font-size:.86em}header.top nav a{padding:4px 4px}
table.cards,table.cards tbody,table.cards tr,table.cards td{display:block;width:100%}
table.cards thead{display:none}table.cards{border:0;background:none}
table.cards tr{background:var(--panel);border:1px solid var(--line);border-radius:10px;margin-bottom:10px;padding:6px 4px}
table.cards td{border:0;padding:4px 10px;display:grid;grid-template-columns:7.5em minmax(0,1fr);gap:8px}table.cards td .name{max-width:100%}table.cards ol.runs li{white-space:nowrap}
table.cards td::before{content:attr(data-label);color:var(--muted);font-size:.82em;text-transform:uppercase;letter-spacing:.03em;padding-top:2px}
table.cards td:has(> div:empty){display:none}table.cards td.wide{display:block}table.cards td.wide::before{display:block}
dl.kv{grid-template-columns:minmax(0,1fr)}.task dl.kv{grid-template-columns:max-content minmax(0,1fr)}.task dl.kv dt{margin-top:0}.grid{grid-template-columns:repeat(2,1fr);gap:8px}.stat .v{font-size:1.3em}dl.kv dt{margin-top:6px}
}
`;

/** The script, served at `{basePath}/assets/app.js`: actions with the CSRF header, and live refresh over SSE. */
export const APP_JS = `
(function(){
  var meta=function(n){var m=document.querySelector('meta[name="'+n+'"]');return m?m.getAttribute('content'):''};
  var token=meta('orrery-csrf'), base=meta('orrery-base');
  var flash=function(text,ok){var f=document.getElementById('flash');if(!f)return;f.innerHTML='';if(!text)return;
    var d=document.createElement('div');d.className='flash'+(ok?' ok':'');d.setAttribute('role',ok?'status':'alert');d.textContent=text;f.appendChild(d);};
  var busy=false, pending=false;
  // A form someone focused or typed into is never replaced under them by a live refresh.
  function editing(){var a=document.activeElement;return (a&&(a.tagName==='INPUT'||a.tagName==='SELECT'||a.tagName==='TEXTAREA')&&a.closest('main'))||document.querySelector('main form.act[data-dirty]');}
  ['input','change'].forEach(function(type){document.addEventListener(type,function(ev){var f=ev.target.closest&&ev.target.closest('form.act');if(f)f.setAttribute('data-dirty','1');});});
  function refresh(){
    if(busy||editing()){pending=true;return;}
    busy=true;pending=false;
    var open=[].map.call(document.querySelectorAll('main details[open][id]'),function(d){return d.id});
    fetch(location.href,{headers:{'Accept':'text/html'},credentials:'same-origin'}).then(function(r){return r.text()}).then(function(t){
      var doc=new DOMParser().parseFromString(t,'text/html');var next=doc.querySelector('main');var cur=document.querySelector('main');
      if(next&&cur&&!editing()){var f=document.getElementById('flash');var keep=f?f.innerHTML:'';cur.innerHTML=next.innerHTML;var nf=document.getElementById('flash');if(nf)nf.innerHTML=keep;
        open.forEach(function(id){var d=document.getElementById(id);if(d)d.open=true;});document.body.setAttribute('data-refreshed',String(Date.now()));}
      else pending=true;
    }).catch(function(){}).then(function(){busy=false;});
  }
  document.addEventListener('focusout',function(){setTimeout(function(){if(pending&&!editing())refresh();},50);});
  document.addEventListener('submit',function(ev){
    var form=ev.target;if(!form.matches||!form.matches('form.act'))return;ev.preventDefault();
    var ask=form.getAttribute('data-confirm');if(ask&&!window.confirm(ask))return;
    var body={};new FormData(form).forEach(function(v,k){body[k]=v;});
    // A field marked data-json (a signal's payload) is sent parsed, left out when empty; text
    // that does not parse is reported and nothing is sent.
    var bad='';[].forEach.call(form.querySelectorAll('[data-json]'),function(f){var t=f.value.trim();if(t===''){delete body[f.name];return;}
      try{body[f.name]=JSON.parse(t);}catch(e){bad=bad||f.getAttribute('data-json')+' is not valid JSON ('+e.message+'): nothing was sent.';}});
    if(bad){flash(bad);return;}
    var button=form.querySelector('button');if(button)button.disabled=true;
    fetch(form.getAttribute('action'),{method:form.getAttribute('data-method')||'POST',credentials:'same-origin',
      headers:{'Content-Type':'application/json','Accept':'application/json','X-Orrery-Csrf':token},body:JSON.stringify(body)})
    .then(function(r){return r.json().catch(function(){return {}}).then(function(j){return {ok:r.ok,j:j}})})
    .then(function(res){
      if(!res.ok){flash((res.j.error&&res.j.error.message)||'The action failed.');return;}
      if(res.j.redirect){location.href=res.j.redirect;return;}
      flash(res.j.message||'Done.',true);form.reset();form.removeAttribute('data-dirty');if(document.activeElement)document.activeElement.blur();refresh();
    }).catch(function(e){flash('The action failed: '+e.message);})
    .then(function(){if(button)button.disabled=false;});
  });
  // The schedule forms' live preview: the next runs of the expression being typed, asked of
  // api/preview (read-only, so it works in read-only mode and under any base path), debounced
  // so a burst of keys sends one request; a stale answer never overwrites a newer one.
  var PREVIEWED=['cronExpression','timezone','dst.repeated','dst.gap','startAt'];
  function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined)e.textContent=text;return e;}
  function showPreview(box,res){
    box.textContent='';
    if(!res.ok){box.setAttribute('data-state','error');box.appendChild(el('p','small error-msg',(res.j.error&&res.j.error.message)||'This expression cannot be previewed.'));return;}
    var p=res.j;box.setAttribute('data-state','ok');
    box.appendChild(el('p','small',(p.description?p.description+' · ':'')+'next runs in '+p.timezone+(p.timezone==='UTC'?'':' and UTC')));
    if(p.shown.length===0){box.appendChild(el('p','small muted','No run ahead: the expression has no occurrence after now.'));return;}
    var list=el('ol','runs small');
    p.shown.forEach(function(run){var li=el('li');li.appendChild(el('span','mono',run.local));
      if(p.timezone==='UTC')li.appendChild(document.createTextNode(' UTC'));else{li.appendChild(document.createTextNode(' '));li.appendChild(el('span','muted mono','· '+run.utc));}
      list.appendChild(li);});
    box.appendChild(list);
  }
  function preview(form){
    var box=form.querySelector('[data-cron-preview]');if(!box)return;
    if(!box.hasAttribute('data-hint'))box.setAttribute('data-hint',box.textContent);
    var value=function(n){var f=form.elements.namedItem(n);return f&&typeof f.value==='string'?f.value:'';};
    var q=new URLSearchParams();PREVIEWED.forEach(function(n){if(value(n).trim())q.set(n==='cronExpression'?'expression':n,value(n));});
    var seq=String(Number(box.getAttribute('data-seq')||0)+1);box.setAttribute('data-seq',seq);
    if(!q.get('expression')){box.textContent='';box.removeAttribute('data-state');box.appendChild(el('p','small muted',box.getAttribute('data-hint')));return;}
    fetch(base+'api/preview?'+q.toString(),{headers:{'Accept':'application/json'},credentials:'same-origin'})
    .then(function(r){return r.json().catch(function(){return {}}).then(function(j){return {ok:r.ok,j:j}})})
    .then(function(res){if(box.getAttribute('data-seq')===seq)showPreview(box,res);}).catch(function(){});
  }
  var previewTimer;
  ['input','change'].forEach(function(type){document.addEventListener(type,function(ev){
    var t=ev.target;var form=t.closest&&t.closest('form.schedule-form');if(!form||PREVIEWED.indexOf(t.name)<0)return;
    clearTimeout(previewTimer);previewTimer=setTimeout(function(){preview(form);},250);});});
  // A policy select shows only the choice's name; its hint says what the selected one does.
  document.addEventListener('change',function(ev){var t=ev.target;if(!t.matches||!t.matches('select[data-descriptions]'))return;
    var hint=t.parentElement&&t.parentElement.querySelector('.choice-hint');if(!hint)return;
    try{hint.textContent=JSON.parse(t.getAttribute('data-descriptions'))[t.value]||'';}catch(e){}});
  // An opened form previews what it holds already (the Edit form: the schedule's own expression).
  document.addEventListener('toggle',function(ev){var form=ev.target.open&&ev.target.querySelector&&ev.target.querySelector('form.schedule-form');if(form)preview(form);},true);
  if(window.EventSource){
    var live=document.getElementById('live');
    var es=new EventSource(base+'api/events');
    es.addEventListener('open',function(){if(live){live.classList.add('on');live.textContent='Live';}});
    es.addEventListener('error',function(){if(live){live.classList.remove('on');live.textContent='Reconnecting…';}});
    es.addEventListener('change',function(){refresh();});
  }
})();
`;
