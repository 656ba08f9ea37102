// Package registry pulls images from OCI and Docker v2 registries into
// the image store ([image.Store]), and takes one file out of an image, with
// github.com/google/go-containerregistry. It is kept apart from package
// image so that the unitrun binary, which every job and hook starts, does
// not link go-containerregistry and the packages whose inits it brings
// (regexps compiled at every start): unitrun runs cmd/unitrun-pull, which
// links this package, and the node links it itself.
package registry
