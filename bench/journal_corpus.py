"""A realistic, deterministic journal for the retrieval benchmark: VPS work in French.

Two kinds of entries. *Episodes* (``EPISODES``): 36 specific problems, each with what was done,
the pitfall and the lesson, and the questions (``queries``) a human or an agent would ask when
the problem comes back — natural French questions, English keywords, partial words, other
inflections and synonyms; the episode is the one relevant entry. *Routine* entries (from
``_ROUTINE``): the everyday work of the same VPS (updates, renewals that went fine, restarts,
clean-ups, deployments), with the same common words (docker, serveur, config, nginx, certificat,
logs, disque, sauvegarde…), so that most queries match hundreds of entries and the episode has
to be ranked, not just found. Some routine entries are near misses of an episode (a certificate
renewal that worked, a Docker clean-up that freed a little space).

The queries were written with the episodes, before the ranker was run on them.
"""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ocmem.home.journalmeaning import Meaning


class Episode(NamedTuple):
    titre: str
    tags: tuple[str, ...]
    demande: str
    fait: str
    piege: str
    lecon: str
    queries: tuple[str, ...]


EPISODES: tuple[Episode, ...] = (
    Episode(
        "Certificat expiré sur blog.exemple.fr, renouvellement en échec",
        ("certbot", "nginx", "tls"),
        "le blog affiche une alerte de certificat expiré dans le navigateur",
        "certbot renew échouait : nginx redirigeait le challenge HTTP-01 vers HTTPS ; ajouté location /.well-known/acme-challenge/ avant la redirection, certbot renew puis reload de nginx",
        "le timer certbot tournait mais échouait en silence depuis deux mois",
        "exclure /.well-known/acme-challenge/ de la redirection HTTPS et surveiller la date d'expiration",
        (
            "comment renouveler un certificat expiré sur nginx",
            "certbot renew acme challenge redirect https",
        ),
    ),
    Episode(
        "Disque plein à cause des images Docker",
        ("docker", "disque"),
        "plus de place sur le VPS, les déploiements échouent avec no space left on device",
        "docker system df puis docker image prune -a et docker builder prune : 38 Go libérés",
        "les volumes orphelins ne partent pas avec prune -a",
        "planifier un docker system prune hebdomadaire et surveiller /var/lib/docker",
        (
            "le disque est plein à cause de docker, comment libérer de la place",
            "docker disk full cleanup",
        ),
    ),
    Episode(
        "Connexions PostgreSQL refusées depuis le conteneur api",
        ("postgres", "docker", "reseau"),
        "l'api en conteneur n'arrive pas à joindre la base sur l'hôte",
        "listen_addresses passé de localhost à '*', réseau 172.18.0.0/16 ajouté dans pg_hba.conf, reload",
        "pg_hba.conf est lu de haut en bas : une ligne reject plus haut masquait la nouvelle",
        "après toute modification de pg_hba.conf : SELECT pg_reload_conf() et tester depuis le conteneur",
        (
            "pg_hba conteneur connexion refusée",
            "l'api n'arrive pas à se connecter à postgres depuis docker",
        ),
    ),
    Episode(
        "Sauvegarde restic vers S3 en échec",
        ("backup", "restic"),
        "la sauvegarde nocturne signale une erreur depuis trois jours",
        "restic check a montré un verrou périmé ; restic unlock puis nouvelle sauvegarde complète",
        "deux tâches cron lançaient restic en même temps et laissaient des verrous",
        "un seul job de sauvegarde protégé par flock, et restic unlock après un arrêt brutal",
        ("la sauvegarde restic échoue à cause d'un verrou", "restic lock"),
    ),
    Episode(
        "Gunicorn ne démarre pas après un reboot",
        ("systemd", "python"),
        "après le redémarrage du VPS l'application web reste en erreur 502",
        "l'unité gunicorn démarrait avant PostgreSQL ; ajouté After=postgresql.service, Wants= et Restart=on-failure",
        "journalctl -u gunicorn montrait OperationalError uniquement au démarrage de la machine",
        "déclarer les dépendances After=/Wants= vers la base et Restart=on-failure pour les services applicatifs",
        (
            "le service ne démarre pas au boot parce que la base n'est pas prête",
            "systemd service start order database",
        ),
    ),
    Episode(
        "Propagation DNS lente après changement d'IP",
        ("dns", "migration"),
        "après la migration vers le nouveau VPS, une partie des visiteurs arrive encore sur l'ancien",
        "le TTL de l'enregistrement A était de 86400 ; baissé à 300, attendu l'expiration des caches",
        "le résolveur de l'hébergeur gardait l'ancienne IP en cache malgré le changement",
        "baisser le TTL à 300 la veille de tout changement d'adresse IP",
        ("le domaine pointe encore vers l'ancienne adresse ip", "dns ttl migration"),
    ),
    Episode(
        "Docker contourne ufw : PostgreSQL exposé sur Internet",
        ("firewall", "docker", "securite"),
        "un scan externe montre le port 5432 ouvert alors que ufw le refuse",
        "Docker insère ses règles iptables avant celles d'ufw ; port publié sur 127.0.0.1:5432 au lieu de 5432",
        "ufw status affichait le port comme bloqué alors qu'il était joignable",
        "publier les ports Docker sur 127.0.0.1 ou filtrer dans la chaîne DOCKER-USER ; vérifier avec nmap depuis l'extérieur",
        ("pourquoi ufw ne bloque pas le port publié par docker", "ufw docker bypass"),
    ),
    Episode(
        "Push refusé : fichier de 200 Mo dans l'historique git",
        ("git",),
        "git push rejeté par GitHub à cause d'un dump SQL commité",
        "git filter-repo --strip-blobs-bigger-than 50M puis push --force après accord de l'équipe",
        "supprimer le fichier dans un nouveau commit ne suffit pas, il reste dans l'historique",
        "mettre les dumps dans .gitignore et utiliser git lfs pour les gros fichiers",
        ("git push rejeté gros fichier", "enlever un gros fichier de l'historique git"),
    ),
    Episode(
        "ModuleNotFoundError après passage à Python 3.12",
        ("python",),
        "l'application ne démarre plus après la mise à niveau de Debian",
        "le venv pointait vers l'interpréteur 3.11 supprimé par apt ; venv recréé et requirements.txt réinstallé",
        "pip install réussissait, mais dans le Python du système",
        "recréer les environnements virtuels après chaque montée de version de Python, ne jamais les copier",
        ("module introuvable après une mise à jour de python", "venv broken after python upgrade"),
    ),
    Episode(
        "Build Node tué par l'OOM killer",
        ("node", "memoire"),
        "npm run build s'arrête avec un simple Killed",
        "le build dépassait 2 Go de RAM ; ajouté 2 Go de swap et NODE_OPTIONS=--max-old-space-size=1536",
        "seul dmesg montrait l'OOM killer, npm n'affichait que Killed",
        "sur un VPS de 2 Go, prévoir un swap pour les builds front",
        ("le build node plante faute de mémoire", "npm build killed oom"),
    ),
    Episode(
        "Script de nettoyage jamais exécuté par cron",
        ("cron",),
        "les vieux fichiers de /srv/exports ne sont jamais supprimés",
        "le script appelait docker sans chemin absolu ; le PATH de cron est réduit : PATH= ajouté en tête de la crontab",
        "le script fonctionnait lancé à la main, pas depuis cron",
        "dans une crontab, définir PATH et rediriger la sortie vers un fichier de log",
        ("mon script marche à la main mais pas dans la crontab",),
    ),
    Episode(
        "Plus d'accès SSH après changement de port",
        ("ssh", "firewall"),
        "connexion refusée après avoir passé sshd sur le port 2222",
        "ufw n'autorisait que le 22 ; accès rétabli par la console de secours de l'hébergeur, puis ufw allow 2222/tcp",
        "la session ouverte a été fermée avant de tester le nouveau port",
        "ouvrir le nouveau port dans le pare-feu et le tester depuis une seconde session avant de fermer la première",
        ("bloqué dehors après avoir changé le port ssh", "locked out ssh port change"),
    ),
    Episode(
        "Partition racine pleine : journaux systemd énormes",
        ("disque", "logs", "systemd"),
        "la partition / est à 100 %",
        "journalctl --disk-usage : 9 Go ; journalctl --vacuum-size=500M et SystemMaxUse=500M dans journald.conf",
        "du -sh sur /home et /srv n'expliquait rien, tout était dans /var/log/journal",
        "fixer SystemMaxUse dans journald.conf sur chaque VPS",
        ("journalctl prend trop de place", "limiter la taille des logs journald"),
    ),
    Episode(
        "logrotate ne tournait plus les logs nginx",
        ("logs", "nginx"),
        "access.log de nginx fait 6 Go",
        "accolade manquante dans /etc/logrotate.d/nginx ; validé avec logrotate -d puis rotation forcée",
        "une erreur de syntaxe fait ignorer tout le fichier de configuration, en silence",
        "tester avec logrotate -d après chaque modification",
        ("la rotation des logs nginx ne marche plus", "logrotate nginx"),
    ),
    Episode(
        "502 Bad Gateway après le déploiement de l'api",
        ("nginx", "docker"),
        "nginx renvoie 502 vers le nouveau conteneur de l'api",
        "uvicorn écoutait sur 127.0.0.1 dans le conteneur ; lancé avec --host 0.0.0.0",
        "curl depuis l'intérieur du conteneur marchait, pas depuis l'hôte",
        "un service dans un conteneur doit écouter sur 0.0.0.0, pas sur localhost",
        ("erreur 502 de nginx vers un conteneur", "bad gateway docker uvicorn"),
    ),
    Episode(
        "Upload refusé : 413 Request Entity Too Large",
        ("nginx",),
        "l'envoi de fichiers de plus de 1 Mo échoue sur le site",
        "client_max_body_size 50m ajouté dans le bloc server",
        "la directive avait été mise dans un bloc location qui ne servait pas",
        "placer client_max_body_size au niveau du bloc server",
        ("envoi de gros fichiers refusé par nginx", "413 too large"),
    ),
    Episode(
        "Montée de version PostgreSQL 14 vers 16",
        ("postgres", "migration"),
        "passer la base en version 16 avant la fin du support de la 14",
        "pg_upgradecluster 14 main, vérification des données, puis pg_dropcluster 14 main",
        "l'extension postgis devait être installée pour la 16 avant la migration",
        "installer les extensions de la nouvelle version avant pg_upgradecluster",
        ("migrer postgres vers une nouvelle version majeure",),
    ),
    Episode(
        "Requêtes lentes : index manquant sur orders.customer_id",
        ("postgres", "performance"),
        "la page des commandes met 8 secondes à s'afficher",
        "pg_stat_statements pour trouver la requête, puis CREATE INDEX CONCURRENTLY sur orders.customer_id",
        "un premier CREATE INDEX sans CONCURRENTLY a bloqué les écritures pendant deux minutes",
        "toujours CREATE INDEX CONCURRENTLY en production",
        (
            "la base de données est lente, comment trouver la requête en cause",
            "slow query postgres index",
        ),
    ),
    Episode(
        "Variables d'environnement ignorées par docker compose",
        ("docker",),
        "le conteneur ne voit pas les secrets du fichier .env.prod",
        "ajouté env_file: .env.prod dans le service du compose",
        ".env n'est lu que pour l'interpolation du fichier compose, il n'est pas transmis aux conteneurs",
        "distinguer .env (interpolation) et env_file (variables du conteneur)",
        ("les variables du fichier env ne sont pas prises en compte dans le conteneur",),
    ),
    Episode(
        "Logs d'un conteneur qui remplissent le disque",
        ("docker", "logs"),
        "un conteneur très bavard a rempli /var/lib/docker",
        "12 Go de json.log ; log-opts max-size=10m et max-file=3 dans /etc/docker/daemon.json, conteneurs recréés",
        "la nouvelle configuration ne s'applique qu'aux conteneurs recréés",
        "configurer la rotation des logs dans daemon.json dès l'installation de Docker",
        ("limiter la taille des logs des conteneurs",),
    ),
    Episode(
        "Tâches cron décalées d'une heure",
        ("cron", "systemd"),
        "le rapport quotidien arrive à 7 h au lieu de 6 h",
        "le serveur était en UTC ; timedatectl set-timezone Europe/Paris",
        "le passage à l'heure d'été décale aussi les tâches planifiées entre 2 h et 3 h",
        "régler le fuseau horaire à l'installation et éviter de planifier entre 2 h et 3 h",
        ("cron s'exécute à la mauvaise heure", "timezone cron"),
    ),
    Episode(
        "Mails du serveur classés en spam",
        ("mail", "dns"),
        "les notifications envoyées par le VPS arrivent dans les indésirables",
        "ajouté les enregistrements SPF, DKIM (opendkim) et DMARC",
        "le reverse DNS de l'IP pointait vers le nom générique de l'hébergeur",
        "PTR, SPF, DKIM et DMARC avant d'envoyer du mail depuis un VPS",
        ("les emails partent en spam",),
    ),
    Episode(
        "fail2ban ne bannissait personne",
        ("securite", "ssh"),
        "des milliers de tentatives de connexion SSH dans les journaux",
        "la jail sshd lisait /var/log/auth.log, absent sur Debian 12 ; backend = systemd",
        "fail2ban-client status affichait 0 échec, sans aucune erreur",
        "sur Debian 12, backend = systemd dans les jails de fail2ban",
        ("fail2ban ne bloque pas les attaques ssh",),
    ),
    Episode(
        "Module natif cassé après passage à Node 20",
        ("node",),
        "l'application plante au démarrage après la mise à jour de Node",
        "bcrypt était compilé pour l'ancienne ABI ; npm rebuild puis redémarrage",
        "l'erreur parlait de NODE_MODULE_VERSION, pas de bcrypt",
        "npm rebuild après tout changement de version de Node",
        (
            "erreur de module natif après avoir changé de version de node",
            "NODE_MODULE_VERSION mismatch",
        ),
    ),
    Episode(
        "Conflit de merge sur package-lock.json",
        ("git", "node"),
        "fusion de la branche feature impossible",
        "repris le package-lock.json de main puis npm install pour le régénérer",
        "résoudre le conflit à la main a cassé l'intégrité du lockfile",
        "ne jamais résoudre un conflit de lockfile à la main : le régénérer",
        ("conflit git sur package-lock",),
    ),
    Episode(
        "Nginx servait l'ancien certificat après renouvellement",
        ("certbot", "nginx", "tls"),
        "le navigateur signale un certificat expiré alors que certbot dit l'avoir renouvelé",
        "certbot renouvelait bien mais nginx n'était jamais rechargé ; ajouté --deploy-hook 'systemctl reload nginx'",
        "le certificat sur disque était neuf, celui servi par nginx expiré",
        "toujours un deploy-hook qui recharge nginx après le renouvellement",
        (
            "certificat renouvelé mais le navigateur voit encore l'ancien",
            "certbot deploy hook reload",
        ),
    ),
    Episode(
        "Restauration impossible : dump de la base vide",
        ("backup", "postgres"),
        "test de restauration de la base de production",
        "pg_dump tournait avec un rôle sans droits sur le schéma : dumps de 0 octet depuis trois semaines",
        "le script de sauvegarde ne vérifiait pas le code de retour de pg_dump",
        "tester une restauration chaque mois et alerter quand un dump est vide",
        ("la sauvegarde de la base était vide", "pg_dump empty backup"),
    ),
    Episode(
        "Site injoignable en IPv6",
        ("dns", "nginx", "reseau"),
        "certains visiteurs n'arrivent pas à charger le site",
        "l'enregistrement AAAA existait mais nginx n'avait pas de listen [::]:443",
        "les tests depuis le bureau passaient par IPv4",
        "ajouter listen [::]:443 ou retirer l'enregistrement AAAA",
        ("le site ne marche pas en ipv6",),
    ),
    Episode(
        "Deux stacks compose qui ne se voient pas",
        ("docker", "reseau"),
        "le reverse proxy ne joint pas le conteneur de l'application",
        "réseau externe partagé proxy déclaré dans les deux fichiers compose",
        "chaque projet compose crée son propre réseau par défaut",
        "un réseau externe commun entre le reverse proxy et les applications",
        ("faire communiquer deux docker compose différents",),
    ),
    Episode(
        "Permission denied sur un volume monté",
        ("docker", "permissions"),
        "le conteneur n'écrit pas dans /srv/data",
        "le conteneur tourne en uid 1000 et le dossier hôte appartenait à root ; chown 1000:1000",
        "recréer le conteneur ne changeait rien",
        "aligner l'uid du conteneur sur le propriétaire du dossier monté",
        ("permission refusée pour écrire dans un volume docker",),
    ),
    Episode(
        "Redis vidé à chaque redémarrage",
        ("redis", "docker"),
        "les sessions des utilisateurs disparaissent après chaque déploiement",
        "pas de volume pour /data : volume nommé ajouté et appendonly yes",
        "docker compose down -v supprimait aussi les volumes nommés",
        "un volume nommé pour /data, et jamais down -v en production",
        ("redis perd ses données quand on redémarre le conteneur",),
    ),
    Episode(
        "Horloge du serveur décalée de quatre minutes",
        ("systemd",),
        "les codes TOTP de connexion sont refusés",
        "systemd-timesyncd était désactivé ; timedatectl set-ntp true",
        "l'écart grandissait de quelques secondes par jour, invisible au début",
        "vérifier timedatectl sur chaque nouveau VPS",
        ("l'heure du serveur n'est pas bonne, les codes de connexion sont refusés",),
    ),
    Episode(
        "apt bloqué par le verrou dpkg",
        ("apt", "debian"),
        "apt upgrade répond Could not get lock /var/lib/dpkg/lock-frontend",
        "unattended-upgrades tournait ; attendu la fin puis dpkg --configure -a",
        "supprimer le fichier de verrou aurait pu corrompre la base dpkg",
        "ne jamais supprimer le verrou de dpkg : attendre unattended-upgrades",
        ("could not get lock dpkg", "apt est bloqué par un verrou"),
    ),
    Episode(
        "Alertes de disponibilité la nuit : faux positifs",
        ("monitoring",),
        "une alerte de site indisponible chaque nuit vers 3 h",
        "le check HTTP expirait pendant la sauvegarde nocturne ; délai passé de 10 à 30 s",
        "la sauvegarde saturait les entrées-sorties disque pendant vingt minutes",
        "décaler les checks ou augmenter leur délai pendant les fenêtres de sauvegarde",
        ("alertes de supervision pendant la nuit à cause de la sauvegarde",),
    ),
    Episode(
        "Clé SSH refusée : droits sur authorized_keys",
        ("ssh",),
        "Permission denied (publickey) pour le nouvel utilisateur deploy",
        "chmod 700 ~/.ssh et 600 ~/.ssh/authorized_keys ; StrictModes refusait la clé",
        "le client n'affichait que Permission denied (publickey), la raison était dans auth.log côté serveur",
        "vérifier les droits de ~/.ssh d'abord, et lire le journal d'authentification du serveur",
        ("permission denied publickey alors que la clé est bien copiée",),
    ),
    Episode(
        "Mémoire saturée par les workers php-fpm",
        ("php", "memoire"),
        "le VPS swappe et le site répond en 20 secondes",
        "pm.max_children à 50 avec 60 Mo par worker ; ramené à 12 et pm = ondemand",
        "chaque worker grossissait au fil des requêtes et n'était jamais recyclé",
        "calculer pm.max_children selon la RAM disponible et fixer pm.max_requests",
        ("php fpm consomme toute la ram", "le site rame et le serveur swappe"),
    ),
)


# Routine work: (title, tags, request, done, pitfall, lesson) with {slots}.
_ROUTINE: tuple[tuple[str, tuple[str, ...], str, str, str, str], ...] = (
    (
        "Renouvellement du certificat de {site}",
        ("certbot", "nginx"),
        "vérifier le certificat de {site}",
        "certbot renew --dry-run puis renouvellement : certificat valide jusqu'en {mois}",
        "aucun",
        "le renouvellement automatique fonctionne, rien à faire",
    ),
    (
        "Nouveau certificat pour {site}",
        ("certbot", "nginx", "tls"),
        "mettre {site} en HTTPS",
        "certbot --nginx -d {site}, redirection HTTPS ajoutée dans la config nginx",
        "le DNS de {site} n'était pas encore propagé",
        "attendre la propagation DNS avant de demander un certificat",
    ),
    (
        "Ajout du vhost nginx pour {site}",
        ("nginx",),
        "publier {site} derrière nginx",
        "nouveau server block dans /etc/nginx/sites-available, lien dans sites-enabled, nginx -t puis reload",
        "un server_name en double générait un avertissement",
        "toujours nginx -t avant de recharger la configuration",
    ),
    (
        "Reverse proxy nginx vers {app}",
        ("nginx", "docker"),
        "exposer {app} sur {site}",
        "proxy_pass vers le conteneur {app} sur le port {port}, en-têtes X-Forwarded-* ajoutés",
        "le conteneur {app} n'était pas encore démarré",
        "vérifier que le conteneur répond avant de changer la config nginx",
    ),
    (
        "Mise à jour de l'image Docker de {app}",
        ("docker",),
        "passer {app} en version {version}",
        "docker compose pull {app} puis docker compose up -d, logs vérifiés",
        "le tag latest ne changeait pas de version",
        "épingler les images Docker sur un tag de version",
    ),
    (
        "Redémarrage du conteneur {app}",
        ("docker",),
        "{app} ne répond plus",
        "docker compose restart {app} ; le conteneur répond de nouveau",
        "les logs du conteneur ne montraient rien d'anormal",
        "regarder docker logs {app} avant de redémarrer",
    ),
    (
        "Nettoyage Docker sur le serveur {host}",
        ("docker", "disque"),
        "faire un peu de place sur {host}",
        "docker image prune : {go} Go libérés",
        "aucun",
        "nettoyer les images Docker inutilisées de temps en temps",
    ),
    (
        "Déploiement de {app} en version {version}",
        ("deploiement", "docker"),
        "déployer {app} {version} sur le serveur",
        "build de l'image, push sur le registre, docker compose up -d sur {host}",
        "la migration de la base de {app} a pris {minutes} minutes",
        "prévoir les migrations de base avant de déployer",
    ),
    (
        "Sauvegarde de la base {db} vérifiée",
        ("backup", "postgres"),
        "contrôler la sauvegarde de {db}",
        "pg_dump de {db} présent, taille normale, copie restic à jour",
        "aucun",
        "vérifier la taille des dumps chaque semaine",
    ),
    (
        "Sauvegarde restic du serveur {host}",
        ("backup", "restic"),
        "mettre en place la sauvegarde de {host}",
        "restic init sur le dépôt S3, sauvegarde de /etc et /srv, cron à {heure} h",
        "le mot de passe du dépôt restic était dans le script",
        "stocker le mot de passe restic dans un fichier protégé",
    ),
    (
        "Création de la base {db}",
        ("postgres",),
        "une base pour {app}",
        "createuser et createdb {db}, droits accordés au rôle de {app}",
        "le rôle n'avait pas les droits sur le schéma public",
        "donner explicitement les droits sur le schéma public",
    ),
    (
        "Réglage de PostgreSQL sur {host}",
        ("postgres", "performance"),
        "optimiser la config postgres de {host}",
        "shared_buffers et work_mem ajustés dans postgresql.conf, redémarrage de postgres",
        "le redémarrage coupait les connexions de {app}",
        "prévenir avant de redémarrer la base",
    ),
    (
        "Nouvelle unité systemd pour {app}",
        ("systemd",),
        "lancer {app} comme service",
        "unité /etc/systemd/system/{app}.service, systemctl daemon-reload, enable --now",
        "oublié daemon-reload après la modification de l'unité",
        "daemon-reload après chaque modification d'une unité systemd",
    ),
    (
        "Redémarrage du service {service}",
        ("systemd",),
        "{service} ne répond plus sur {host}",
        "systemctl restart {service}, statut vérifié avec systemctl status",
        "aucun",
        "consulter journalctl -u {service} avant de redémarrer",
    ),
    (
        "Enregistrement DNS pour {site}",
        ("dns",),
        "faire pointer {site} vers {host}",
        "enregistrement A créé chez le registrar, vérifié avec dig",
        "la zone avait encore un ancien CNAME",
        "vérifier avec dig depuis plusieurs résolveurs",
    ),
    (
        "Ouverture du port {port} dans ufw",
        ("firewall",),
        "autoriser le port {port} pour {app}",
        "ufw allow {port}/tcp puis ufw status",
        "aucun",
        "n'ouvrir que les ports nécessaires et les noter",
    ),
    (
        "Règles du pare-feu de {host} revues",
        ("firewall", "securite"),
        "audit du pare-feu de {host}",
        "ufw status numbered, suppression des règles obsolètes",
        "une règle ouvrait encore un ancien port de test",
        "revoir les règles du pare-feu chaque trimestre",
    ),
    (
        "Nouvelle branche pour {app}",
        ("git",),
        "préparer la fonctionnalité {feature}",
        "git switch -c feature/{feature}, premiers commits poussés",
        "aucun",
        "une branche par fonctionnalité",
    ),
    (
        "Rebase de la branche {feature}",
        ("git",),
        "mettre à jour feature/{feature} avec main",
        "git rebase main, conflits résolus dans {fichier}, push --force-with-lease",
        "un conflit dans {fichier} demandait de relire le code",
        "force-with-lease plutôt que force",
    ),
    (
        "Mise à jour des dépendances Python de {app}",
        ("python",),
        "mettre à jour les paquets de {app}",
        "pip-compile puis pip install -r requirements.txt dans le venv, tests passés",
        "une dépendance avait changé son API",
        "lire les changelogs avant une mise à jour majeure",
    ),
    (
        "Script Python de rapport pour {app}",
        ("python",),
        "générer un rapport quotidien pour {app}",
        "script dans /srv/{app}/report.py, lancé par cron à {heure} h",
        "l'encodage du CSV posait problème dans Excel",
        "écrire les CSV en UTF-8 avec BOM pour Excel",
    ),
    (
        "Mise à jour des paquets npm de {app}",
        ("node",),
        "npm audit signale des vulnérabilités dans {app}",
        "npm audit fix, tests de {app} passés, déploiement",
        "une mise à jour majeure cassait le build",
        "mettre à jour les dépendances majeures une par une",
    ),
    (
        "Build front de {app}",
        ("node",),
        "reconstruire le front de {app}",
        "npm ci puis npm run build, fichiers copiés dans /srv/{app}/public",
        "le cache de build gardait une ancienne version",
        "vider le cache de build quand le résultat surprend",
    ),
    (
        "Tâche cron pour {app}",
        ("cron",),
        "planifier une tâche pour {app}",
        "ligne ajoutée dans la crontab de {user} : tous les jours à {heure} h",
        "aucun",
        "commenter chaque ligne de la crontab",
    ),
    (
        "Ajout d'un utilisateur SSH {user}",
        ("ssh",),
        "donner un accès SSH à {user}",
        "adduser {user}, clé publique dans authorized_keys, connexion testée",
        "aucun",
        "une clé par personne, jamais de mot de passe",
    ),
    (
        "Durcissement SSH de {host}",
        ("ssh", "securite"),
        "sécuriser SSH sur {host}",
        "PasswordAuthentication no et PermitRootLogin no dans sshd_config, reload de sshd",
        "aucun",
        "garder une session ouverte pendant la modification de sshd_config",
    ),
    (
        "Espace disque sur {host}",
        ("disque",),
        "vérifier l'espace disque de {host}",
        "df -h : {pourcent} % utilisés, rien d'urgent",
        "aucun",
        "surveiller l'espace disque avec une alerte à 80 %",
    ),
    (
        "Agrandissement du disque de {host}",
        ("disque",),
        "{host} manque de place",
        "volume agrandi chez l'hébergeur, growpart puis resize2fs",
        "la partition n'était pas agrandie automatiquement",
        "growpart avant resize2fs",
    ),
    (
        "Consultation des logs de {app}",
        ("logs",),
        "comprendre une erreur de {app}",
        "journalctl et logs nginx consultés : erreur de validation côté client",
        "aucun",
        "chercher dans les logs avant de modifier le code",
    ),
    (
        "Mise à jour du serveur {host}",
        ("apt", "debian"),
        "appliquer les mises à jour de sécurité sur {host}",
        "apt update && apt upgrade, redémarrage pour le noyau",
        "un service ne redémarrait pas tout seul après le reboot",
        "vérifier les services après chaque redémarrage",
    ),
    (
        "Supervision de {site}",
        ("monitoring",),
        "surveiller la disponibilité de {site}",
        "check HTTP toutes les minutes, alerte par mail",
        "aucun",
        "une alerte par site, envoyée à une adresse lue",
    ),
    (
        "Configuration de {app}",
        ("configuration",),
        "changer un paramètre de configuration de {app}",
        "fichier de config de {app} modifié, service redémarré, vérifié",
        "la config était aussi surchargée par une variable d'environnement",
        "chercher toutes les sources de configuration avant de modifier",
    ),
    (
        "Migration de {app} vers {host}",
        ("migration", "docker"),
        "déplacer {app} sur {host}",
        "copie des volumes avec rsync, docker compose up -d sur {host}, DNS mis à jour",
        "un volume oublié contenait les fichiers envoyés",
        "lister les volumes avant une migration",
    ),
    (
        "Redis pour {app}",
        ("redis", "docker"),
        "ajouter un cache à {app}",
        "service redis dans le compose de {app}, connexion configurée",
        "aucun",
        "donner une limite de mémoire à redis",
    ),
    (
        "Envoi de mail depuis {app}",
        ("mail",),
        "{app} doit envoyer des notifications",
        "relais SMTP configuré dans {app}, test d'envoi réussi",
        "le port 25 sortant est bloqué par l'hébergeur",
        "passer par un relais SMTP sur le port 587",
    ),
    (
        "PHP pour {site}",
        ("php", "nginx"),
        "installer le site PHP {site}",
        "php-fpm installé, fastcgi_pass dans le server block de {site}",
        "le socket php-fpm n'avait pas le bon nom de version",
        "vérifier le chemin du socket php-fpm après une mise à jour de PHP",
    ),
)

_SLOTS: dict[str, tuple[str, ...]] = {
    "site": (
        "blog.exemple.fr",
        "shop.exemple.fr",
        "api.exemple.fr",
        "docs.exemple.fr",
        "status.exemple.fr",
        "app.exemple.fr",
        "wiki.exemple.fr",
        "cloud.exemple.fr",
    ),
    "app": (
        "api",
        "shop",
        "wiki",
        "nextcloud",
        "grafana",
        "gitea",
        "umami",
        "plausible",
        "worker",
        "backend",
    ),
    "host": ("vps1", "vps2", "vps-prod", "vps-staging", "ovh-1", "hetzner-2"),
    "version": ("1.4.2", "2.0.0", "2.1.3", "3.0.1", "0.9.8", "5.2.0"),
    "db": ("shop", "wiki", "api", "gitea", "analytics"),
    "service": ("nginx", "postgresql", "redis-server", "php8.2-fpm", "docker", "cron", "ssh"),
    "port": ("3000", "8000", "8080", "8443", "5000", "9000"),
    "feature": ("paiement", "export-csv", "recherche", "notifications", "login-oauth", "factures"),
    "fichier": ("settings.py", "package.json", "docker-compose.yml", "routes.ts", "models.py"),
    "user": ("deploy", "alice", "bob", "backup", "ci"),
    "mois": ("janvier", "mars", "mai", "juillet", "septembre", "novembre"),
    "heure": ("2", "3", "4", "5", "6", "23"),
    "go": ("2", "4", "7", "11", "15"),
    "minutes": ("2", "5", "12", "20"),
    "pourcent": ("41", "55", "63", "72", "78"),
}


class Query(NamedTuple):
    text: str
    ref: str  # "journal AAAA-MM-JJ HH:MM" of the one relevant entry


def build(entries: int, seed: int = 14) -> tuple[str, list[Query]]:
    """A journal of ``entries`` entries (every episode once, routine work otherwise), rendered
    by ocmem itself, and the labelled queries."""
    from ocmem.formats import journal

    rng = random.Random(seed)
    episode_at = dict(zip(rng.sample(range(entries), len(EPISODES)), EPISODES, strict=True))
    when = datetime(2021, 1, 4, 8, 0)
    parts = [journal.JOURNAL_HEADER]
    queries: list[Query] = []
    for i in range(entries):
        when += timedelta(minutes=rng.randint(90, 1500))
        episode = episode_at.get(i)
        if episode is not None:
            fields = {
                "titre": episode.titre,
                "tags": list(episode.tags),
                "demande": episode.demande,
                "fait": episode.fait,
                "piege": episode.piege,
                "lecon": episode.lecon,
                "resultat": "réussi",
            }
            queries += [Query(q, journal.ref_of(when)) for q in episode.queries]
        else:
            title, tags, *texts = rng.choice(_ROUTINE)
            slots = {k: rng.choice(v) for k, v in _SLOTS.items()}
            titre, demande, fait, piege, lecon = (t.format(**slots) for t in (title, *texts))
            fields = {
                "titre": titre,
                "tags": list(tags),
                "demande": demande,
                "fait": fait,
                "piege": piege,
                "lecon": lecon,
                "resultat": rng.choice(("réussi", "réussi", "réussi", "partiel", "échec")),
            }
        parts.append(journal.entry_from_fields(fields, when, 10).render())
    return parts[0].rstrip("\n") + "\n\n" + "\n".join(parts[1:]), queries


# --- the evaluation: labelled set, held-out part --------------------------------------------

LIMIT = 5
DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
HOLDOUTS = (
    ("held-out", DATA / "retrieval_holdout.txt"),
    ("held-out 2", DATA / "retrieval_holdout_2026-12-02b.txt"),
    ("held-out 3", DATA / "retrieval_holdout_2026-12-02c.txt"),
    ("held-out 4", DATA / "retrieval_holdout_2026-12-02d.txt"),
    ("held-out 5", DATA / "retrieval_holdout_2026-12-02e.txt"),
    ("held-out 6", DATA / "retrieval_holdout_2026-12-02f.txt"),
    ("held-out 7", DATA / "retrieval_holdout_2026-12-02g.txt"),
)
"""The held-out parts (each written before a round of tuning, frozen): parts, query => title.
The first was written by the session that tuned, scored after its first two rounds; the others
by writers who saw only the episodes' text. The second was scored before the third round and, by
mistake, once in its middle (aggregates only); the third only after it. The fourth round tuned on
the first three (their misses read: development data since); the fourth part, written before
it, and the fifth, written after it, were each scored once after it. The fifth round tuned on
parts 1–5 (development data since); the sixth part, written before it, and the seventh, written
after it, were each scored once after it."""


class Part(NamedTuple):
    """One part of the evaluation: its queries, each with its relevant ref (None: nothing is)."""

    name: str
    queries: list[tuple[str, str | None]]


class Scores(NamedTuple):
    """A part's figures: ranks of the relevant entry (None: absent from the top 5), and for the
    « nothing relevant » queries whether the search answered nothing."""

    part: str
    ranks: list[int | None]
    nothing: list[bool]

    @property
    def recall(self) -> float:
        return _rate(self.ranks) if self.ranks else 1.0

    @property
    def first(self) -> float:
        return _rate(self.ranks, 1) if self.ranks else 1.0

    @property
    def mrr(self) -> float:
        return _mrr(self.ranks) if self.ranks else 1.0

    @property
    def nothing_precision(self) -> float:
        return sum(self.nothing) / len(self.nothing) if self.nothing else 1.0

    def short_of(self, floor: tuple[float, float, float, float]) -> list[str]:
        """The figures below ``floor`` (recall@5, first hit, MRR, « nothing relevant »)."""
        names = ("recall@5", "first", "MRR", "rien de pertinent")
        have = (self.recall, self.first, self.mrr, self.nothing_precision)
        return [n for n, got, low in zip(names, have, floor, strict=True) if got < low - 1e-9]

    def line(self) -> str:
        found = sum(1 for r in self.ranks if r is not None)
        figures = []
        if self.ranks:
            figures.append(
                f"recall@5 {self.recall:.1%} ({found}/{len(self.ranks)}),"
                f" first {self.first:.1%}, MRR {self.mrr:.2f}"
            )
        if self.nothing:
            figures.append(
                f"rien de pertinent {self.nothing_precision:.1%}"
                f" ({sum(self.nothing)}/{len(self.nothing)})"
            )
        return f"{self.part}: " + ", ".join(figures)


def parts(entries: int = 2_000) -> tuple[str, list[Part]]:
    """The evaluation journal and its parts: the labelled set of ``bench.journal_corpus`` then
    each part of the held-out files, titles resolved to the episodes' refs."""
    text, labelled = build(entries)
    found = [Part("labelled", [(q.text, q.ref) for q in labelled])]
    for prefix, path in HOLDOUTS:
        found += read_parts(path, prefix, text)
    return text, found


def read_parts(path: Path, prefix: str, text: str) -> list[Part]:
    """The parts of an evaluation file (``[part]``, then « query => episode title », « - »:
    nothing relevant), named ``prefix part``, titles resolved to the episodes of ``text``."""
    from ocmem.formats import journal

    by_title = {b.title: b.ref for b in journal.blocks(text)}
    found: list[Part] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            found.append(Part(f"{prefix} {line[1:-1]}", []))
        elif line and not line.startswith("#"):
            query, _, title = line.rpartition(" => ")
            found[-1].queries.append((query, None if title == "-" else by_title[title]))
    return found


def evaluate(
    root: Path, text: str, evaluated: list[Part], vectors: Path | None = None
) -> list[Scores]:
    """Every part's figures, for the ranked search over ``text`` (a journal in ``root``): by the
    words and the meaning when the encoder is installed and ``vectors`` names a folder for its
    vectors (kept there: another run over the same entries encodes nothing), else by the words."""
    from ocmem.home import journalindex

    path = root / "journal.md"
    path.write_text(text, encoding="utf-8")
    index = root / "journal-index.sqlite3"
    meaning = None if vectors is None else encoder_for(vectors, index, path)
    scores = []
    for part in evaluated:
        ranks: list[int | None] = []
        nothing: list[bool] = []
        for query, ref in part.queries:
            found = journalindex.search(index, [path], query, (), LIMIT, meaning=meaning)
            refs = [h.ref for h in found.hits]
            if ref is None:
                nothing.append(not refs)
            else:
                ranks.append(refs.index(ref) + 1 if ref in refs else None)
        scores.append(Scores(part.name, ranks, nothing))
    return scores


def encoder_for(vectors: Path, index: Path, journal_path: Path) -> Meaning | None:
    """The meaning for searches over ``journal_path`` (its vectors in ``vectors``, every entry
    encoded first, so that each search sees them all), or None when the encoder is not
    installed or is switched off (``OCMEM_MEANING=0``)."""
    from ocmem.home import journalindex
    from ocmem.home.journalmeaning import Meaning
    from ocmem.text import meaning

    if not meaning.available():
        return None
    vectors.mkdir(parents=True, exist_ok=True)
    found = Meaning(meaning.Encoder(os.cpu_count() or 1), vectors / "v.sqlite3", vectors / "v.f16")
    journalindex.encode_pending(index, [journal_path], found, vectors / "lock")
    return found


def _rate(ranks: list[int | None], within: int = LIMIT) -> float:
    return sum(1 for r in ranks if r is not None and r <= within) / len(ranks)


def _mrr(ranks: list[int | None]) -> float:
    return sum(1 / r for r in ranks if r is not None) / len(ranks)
