"""The unit tier mirrors the packages it tests (engine/..., operator/...); the modules beside
this file (user functions, graph specs, fakes of our own interfaces) are shared by them."""
