-- lwtool's language server in Neovim (0.10+) for every file kind lwtool validates:
-- *.lwir.*, *.workflow.*, *.definition.* and *.pipeline.* (YAML or JSON).
-- Put this in your config (e.g. ~/.config/nvim/after/plugin/lwtool.lua).
-- The files keep their yaml/json filetype, so yamlls (with the schemas editors/README.md
-- sets up) attaches to them too; lwtool attaches beside it.
local kinds = { "lwir", "workflow", "definition", "pipeline" }

local function is_lwtool_file(name)
  for _, kind in ipairs(kinds) do
    if name:match("%." .. kind .. "%.ya?ml$") or name:match("%." .. kind .. "%.json$") then
      return true
    end
  end
  return false
end

vim.api.nvim_create_autocmd("FileType", {
  pattern = { "yaml", "json" },
  callback = function(args)
    if not is_lwtool_file(vim.fs.basename(vim.api.nvim_buf_get_name(args.buf))) then
      return
    end
    vim.lsp.start({
      name = "lwtool",
      cmd = { "lwtool", "lsp" },
      root_dir = vim.fs.root(args.buf, { ".git", "pyproject.toml" }) or vim.fn.getcwd(),
      -- { portable = true }: each use of an lwtool extension is a warning
      init_options = { portable = vim.g.lwtool_portable == true },
    })
  end,
})
