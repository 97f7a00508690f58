-- LWIR files in Neovim (0.10+): start `lwtool lsp` for *.lwir.yaml / *.lwir.json.
-- Put this in your config (e.g. ~/.config/nvim/after/plugin/lwtool.lua).
vim.filetype.add({
  pattern = {
    [".*%.lwir%.ya?ml"] = "yaml.lwir",
    [".*%.lwir%.json"] = "json.lwir",
  },
})

vim.api.nvim_create_autocmd("FileType", {
  pattern = { "yaml.lwir", "json.lwir" },
  callback = function(args)
    vim.lsp.start({
      name = "lwtool",
      cmd = { "lwtool", "lsp" },
      root_dir = vim.fs.root(args.buf, { ".git", "pyproject.toml" }) or vim.fn.getcwd(),
    })
  end,
})
